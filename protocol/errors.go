package protocol

import (
	"github.com/bourse/bourse"
)

// ErrorReply is the body of every error reply. On NATS the same code
// travels in the Nats-Service-Error-Code header and the message in
// Nats-Service-Error, the convention of nats.go's micro framework, so that
// generic tools see them (package natswire).
type ErrorReply struct {
	Error *bourse.Error `json:"error"`
}

// EncodeError turns err into the headers and body of an error reply. Errors
// without a code are internal: their text stays in the exchange's log.
func EncodeError(err error) (code, message string, body []byte) {
	e := WireError(err)
	body, _ = Marshal(ErrorReply{Error: e})
	return string(e.Code), e.Message, body
}

// WireError is err as it may cross the wire: its code, message, field, op
// and retry time, without what it wraps; an internal error says no more
// than that it is one.
func WireError(err error) *bourse.Error {
	e := &bourse.Error{Code: bourse.ErrorCode(err), Message: bourse.ErrorMessage(err)}
	var be *bourse.Error
	if asError(err, &be) {
		e.Field, e.Op, e.RetryAfterMS = be.Field, be.Op, be.RetryAfterMS
	}
	if e.Code == bourse.EInternal {
		e.Message, e.Op = "internal error", ""
	}
	return e
}

func asError(err error, target **bourse.Error) bool {
	for err != nil {
		if e, ok := err.(*bourse.Error); ok {
			*target = e
			return true
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
