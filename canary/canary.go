// Package canary audits servers' meters. A server's meter could lie: say
// a job used more of its GPUs than it did (the client pays for work not
// done) or less. Nothing the exchange checks by its own clock catches a
// reading that stays within the terms' bounds, so the market does what
// GPU markets do first: it runs, as an ordinary client, a job whose GPU
// use it knows on a named server, and compares the usage the contract
// settled on, U and T, with the truth (Judge). The result joins
// the server's record (exchange, protocol.Canaries): a server that fails
// its canaries is demoted like one that breaks its word.
//
// A canary is an ordinary offer from an ordinary client: its own wallet
// and NATS user, a request id like the command line's, terms naming the
// server, the job and a price, and nothing that says canary. It is paid
// for through the ledger like any offer. Only its result, which the
// runner writes to the exchange's database (Store.PutCanary), says what
// it was; no party on the wire can write one.
//
// What is known exactly: a synthetic job's profile (each GPU busy a
// fraction of the time for a duration), which a server's synthetic
// runner must meter exactly, and a full_use meter's rule (every GPU busy
// for the job's time). A program or image whose GPU use is known (a
// kernel that keeps the GPU busy a known share of a known time) can only
// be known on real GPUs: its operator names the job and states its
// truth (Truth), and chooses a tolerance that covers the meter's noise.
package canary

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Verdict is what a canary found.
type Verdict string

const (
	// Passed: the contract settled on the truth, within the tolerance.
	Passed Verdict = "passed"
	// Failed: the contract settled on more or less than the truth, by
	// more than the tolerance: the server's meter (or its runner) lied.
	Failed Verdict = "failed"
	// Inconclusive: the contract did not settle on a measurement of the
	// whole job (voided, lost, expired, stopped by someone, not settled
	// in time): it says nothing of the meter, and is no one's fault that
	// a canary could tell. The server's record counts its unstarted and
	// lost contracts apart (protocol.Record).
	Inconclusive Verdict = "inconclusive"
)

// Valid says whether v is one of the verdicts.
func (v Verdict) Valid() bool { return v == Passed || v == Failed || v == Inconclusive }

// DefaultTolerance is the relative deviation of U (and of T) a canary
// passes with by default: a synthetic job is metered exactly, a
// real one within a few percent.
var DefaultTolerance = decimal.RequireFromString("0.05")

// DefaultUtilization is a synthetic canary's busy share of each GPU by
// default: below 1, so that a meter that over-reports shows it (the
// exchange clamps U to GPUs × T, so at full use an inflated U is cut back
// to the truth and no lie can be seen).
var DefaultUtilization = decimal.RequireFromString("0.5")

// Truth is what a canary's job uses: each of its GPUs busy Utilization
// (0..1] of the time, for Duration, and the relative deviation from it
// (of U, and of T) that Tolerance lets a result show and pass.
// A zero Duration says the job's length is not known in advance: the
// truth is then Utilization of the time the job ran, by its server's T,
// which checks the meter's rate and not the time it claims.
type Truth struct {
	Utilization decimal.Decimal   `json:"utilization"`
	Duration    contract.Duration `json:"duration,omitempty"`
	Tolerance   decimal.Decimal   `json:"tolerance"`
}

// Check says whether the truth can judge a canary: a utilization in
// (0, 1], no negative duration, a tolerance in [0, 1).
func (t Truth) Check() error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "canary.Truth", Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case !t.Utilization.IsPositive() || t.Utilization.GreaterThan(decimal.NewFromInt(1)):
		return bad("utilization", "%s: want more than 0 and at most 1", t.Utilization)
	case t.Duration < 0:
		return bad("duration", "negative")
	case t.Tolerance.IsNegative() || t.Tolerance.GreaterThanOrEqual(decimal.NewFromInt(1)):
		return bad("tolerance", "%s: want at least 0 and less than 1", t.Tolerance)
	}
	return nil
}

// Profile is the synthetic job whose use is the truth: each GPU busy
// Utilization of the time for Duration.
func (t Truth) Profile() *contract.JobSpec {
	return &contract.JobSpec{Profile: &contract.Profile{Utilization: t.Utilization, Duration: time.Duration(t.Duration)}}
}

// Result is a canary's outcome, as the store keeps it and the runner
// prints it: the contract and its server, when it was judged and what was
// found, why in words, the truth it was judged by, and what the contract
// settled on beside what the truth would have settled on.
type Result struct {
	Contract string    `json:"contract"`
	Server   string    `json:"server"`
	At       time.Time `json:"at"`
	Verdict  Verdict   `json:"verdict"`
	Why      string    `json:"why"`
	Truth    Truth     `json:"truth"`
	// Meter is how the server said it measured the job; Reason why the
	// contract ended.
	Meter  contract.Meter  `json:"meter,omitempty"`
	Reason contract.Reason `json:"reason,omitempty"`
	// GPUs are the contract's, U and T what it settled on, ExpectedU the
	// truth's GPU-seconds; zero where the canary was inconclusive before
	// a reading could be judged.
	GPUs      int               `json:"gpus"`
	U         decimal.Decimal   `json:"u"`
	T         contract.Duration `json:"t"`
	ExpectedU decimal.Decimal   `json:"expected_u"`
	// Charge is what the client paid, ExpectedCharge what the terms ask
	// for the truth's use (at the truth's duration, where it has one).
	Charge         decimal.Decimal `json:"charge"`
	ExpectedCharge decimal.Decimal `json:"expected_charge"`
	// Deviation is U's, (U − ExpectedU) / ExpectedU: positive where the
	// meter said more than the job used. TDeviation is T's from the
	// truth's Duration likewise, nil where the truth has none;
	// ChargeDeviation the charge's, nil where the truth costs nothing,
	// shown and not judged (Judge). All are zero (nil) where the canary
	// was inconclusive.
	Deviation       decimal.Decimal  `json:"deviation"`
	TDeviation      *decimal.Decimal `json:"t_deviation,omitempty"`
	ChargeDeviation *decimal.Decimal `json:"charge_deviation,omitempty"`
}

// Conclusive says whether the result says anything of the meter.
func (r Result) Conclusive() bool { return r.Verdict == Passed || r.Verdict == Failed }

// Check checks a result before a store keeps it: a contract and server,
// a time and a verdict.
func (r Result) Check() error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "canary.Result", Field: field, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.Contract == "":
		return bad("contract", "required")
	case r.Server == "":
		return bad("server", "required")
	case r.At.IsZero():
		return bad("at", "required")
	case !r.Verdict.Valid():
		return bad("verdict", "%q: want passed, failed or inconclusive", r.Verdict)
	}
	return nil
}
