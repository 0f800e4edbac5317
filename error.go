// Package bourse holds what every part of the market shares: the error codes
// that cross the wire. The market itself lives in the subpackages: contract
// (terms, prices, the charge and the record), currency (the ledger),
// exchange, server, bidder and sim.
package bourse

import (
	"errors"
	"fmt"
)

// Code is a machine-readable error kind. Codes cross the wire (NATS headers,
// JSON replies, CLI exit messages): never rename or reuse one.
type Code string

const (
	EInternal            Code = "internal"             // a bug or an unexpected failure
	EUnavailable         Code = "unavailable"          // a dependency is down; retrying may work
	EInvalid             Code = "invalid"              // malformed input
	EInvalidCurve        Code = "invalid_curve"        // a price curve breaks its rules
	EInvalidOffer        Code = "invalid_offer"        // an offer's terms break their rules
	EUnknownCurrency     Code = "unknown_currency"     // no such currency
	ENotFound            Code = "not_found"            // no such account, hold or contract
	EConflict            Code = "conflict"             // exists already with other content
	EInsufficientFunds   Code = "insufficient_funds"   // the balance does not cover the amount
	ECurrencyMismatch    Code = "currency_mismatch"    // accounts or amounts of two currencies
	EIdempotencyConflict Code = "idempotency_conflict" // a key reused for a different request
	EHoldResolved        Code = "hold_resolved"        // the hold was captured, voided or expired already
	EHoldNotDue          Code = "hold_not_due"         // the hold's deadline has not passed
	ECapacityGone        Code = "capacity_gone"        // a counter-offer's GPUs were taken meanwhile
	EPermission          Code = "permission_denied"    // the sender may not do this
	EDeadlineExceeded    Code = "deadline_exceeded"    // no answer in time
	ENoMatch             Code = "no_match"             // no server has the GPUs an offer asks for
	ERateLimited         Code = "rate_limited"         // too many requests from one party; retry after RetryAfterMS
	ECapExceeded         Code = "cap_exceeded"         // an administrator's cap on the client would be passed
	EBookFull            Code = "book_full"            // the book holds as many waiting offers as it may (the client's, or in all)
	// ERejected is a client's own: the exchange answers an offer that every
	// server refused without a counter-offer with those rejections, and
	// bourse bid turns them into this error.
	ERejected  Code = "rejected"
	EUnmetered Code = "unmetered" // the server cannot measure GPU use, and runs no job it could not charge for
	// EOutputLost is a client's own too: the reader of a contract's
	// output (package bidder) finds bytes or the end of it missing, which
	// the output stream no longer holds; the message says what.
	EOutputLost Code = "output_lost"
	// EJobUnsupported: the server does not run jobs of this kind: a
	// program where it runs synthetic jobs only, or no program where it
	// runs programs only.
	EJobUnsupported Code = "job_unsupported"
	// ENoProgram: the contract ran no program (a synthetic job, or one
	// that never started), so it has no logs or results to read.
	ENoProgram Code = "no_program"
)

// Error is the one error type that carries a Code. Op names the operation
// ("currency.Transfer"), Field the offending input where there is one
// ("p[2].x"), Message says what was wrong for a person to read.
type Error struct {
	Code    Code   `json:"code"`
	Op      string `json:"op,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message,omitempty"`
	// RetryAfterMS, on rate_limited and unavailable, is how many
	// milliseconds to wait before the request may succeed.
	RetryAfterMS int64 `json:"retry_after_ms,omitempty"`
	Err          error `json:"-"`
}

func (e *Error) Error() string {
	s := string(e.Code)
	if e.Op != "" {
		s = e.Op + ": " + s
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, &bourse.Error{Code: bourse.ENotFound}) works through wrapping.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Op == "" && t.Field == "" && t.Message == "" && t.RetryAfterMS == 0 && t.Err == nil
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, op, format string, args ...any) *Error {
	return &Error{Code: code, Op: op, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EInternal for
// any other error, and "" for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

// ErrorMessage returns the human-readable message of the first *Error in
// err's chain, or err.Error() for other errors.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}
