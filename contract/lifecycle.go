package contract

import (
	"time"

	"github.com/shopspring/decimal"
)

// A contract's life, as changes of its record. Each is a pure change of a
// plain value: the exchange runs it inside a store's update, which writes
// the record and moves the money the change calls for in one transaction
// (exchange/transition.go):
//
//	accepted  → running   Start (the server says so), Record (a first reading)
//	running   → running   Record (a newer, believable reading), AskStop (a client's kill or suspend)
//	accepted, running → settled   Settle (the charge to the server, the rest back)
//	accepted, running → voided    Void (the whole prepayment back)
//	accepted, running             MarkStuck (a failure to settle or void, and when to retry)

// Ended reports whether a contract in state s has ended: settled or
// voided. An ended contract holds no escrow and changes no more.
func (s State) Ended() bool { return s == StateSettled || s == StateVoided }

// After reports whether s comes later than t in a contract's life:
// accepted, then running, then settled or voided (which are both last).
// A state that is none of these comes before them all.
func (s State) After(t State) bool { return s.rank() > t.rank() }

func (s State) rank() int {
	switch s {
	case StateAccepted:
		return 1
	case StateRunning:
		return 2
	case StateSettled, StateVoided:
		return 3
	}
	return 0
}

// Ended reports whether the contract has ended (State.Ended).
func (c Contract) Ended() bool { return c.State.Ended() }

// HoldsEscrow reports whether the contract still holds its escrow:
// accepted or running.
func (c Contract) HoldsEscrow() bool { return c.State == StateAccepted || c.State == StateRunning }

// Start records that the server started the job as b says, heard at now:
// accepted → running. A start reported again changes nothing but the
// GPUs, the meter, the output's caps and the image, if a reading came
// first and left them unknown. It reports whether the record changed.
func (c *Contract) Start(b Began, now time.Time) bool {
	if c.State != StateAccepted {
		if c.State != StateRunning {
			return false
		}
		changed := false
		if c.GPUs == nil && b.GPUs != nil {
			c.GPUs, changed = b.GPUs, true
		}
		if c.Meter == "" && b.Meter != "" {
			c.Meter, changed = b.Meter, true
		}
		if c.Output == (OutputCaps{}) && b.Output != (OutputCaps{}) {
			c.Output, changed = b.Output, true
		}
		if c.Image == "" && b.Image != "" {
			c.Image, changed = b.Image, true
		}
		if c.Model == "" && b.Model != "" {
			c.Model, changed = b.Model, true
		}
		return changed
	}
	c.State, c.StartedAt, c.GPUs, c.LastSeen = StateRunning, b.At.UTC(), b.GPUs, now.UTC()
	c.Meter, c.Output, c.Image, c.Model = b.Meter, b.Output, b.Image, b.Model
	return true
}

// Prepare records that the server prepares the accepted contract's job
// (pulls its image) before it starts it, until until at the latest: the
// start deadline moves out to until, never in. It reports whether the
// record changed.
func (c *Contract) Prepare(until time.Time) bool {
	if c.State != StateAccepted || !until.After(c.StartDeadline) {
		return false
	}
	c.StartDeadline = until.UTC()
	return true
}

// Began is what a server says of a job it started: when, on which of its
// GPUs, how it measures it, what it will send of its output, and the
// digest of the image it runs.
type Began struct {
	At     time.Time
	GPUs   []int
	Meter  Meter
	Output OutputCaps
	Image  string
	Model  string // of the GPUs the job got
}

// Record makes r, checked and believed, the contract's latest reading,
// heard at now; a first reading of a contract still accepted shows it
// running, started at r.At − r.T.
func (c *Contract) Record(r Reading, now time.Time) {
	c.Reading, c.LastSeen = &r, now
	if c.State == StateAccepted {
		c.State, c.StartedAt = StateRunning, r.At.Add(-time.Duration(r.T)).UTC()
	}
}

// AskStop records a client's kill or suspend (action) of the running
// contract, heard at now: what the exchange believes of its job ends
// grace later (Stop), whatever its server does. A kill after a suspend
// makes it a kill, its bound unchanged; any other stop asked again
// changes nothing. It reports whether the record changed.
func (c *Contract) AskStop(action Reason, now time.Time, grace time.Duration) bool {
	switch {
	case c.State != StateRunning:
		return false
	case c.Stop == nil:
		c.Stop = &Stop{Reason: action, At: now, By: now.Add(grace)}
	case c.Stop.Reason != ReasonKilled && action == ReasonKilled:
		st := *c.Stop
		st.Reason = action
		c.Stop = &st
	default:
		return false
	}
	return true
}

// StopDue reports whether what the exchange believes of the running
// contract ended by now: its client stopped it, and the stop grace has
// passed.
func (c Contract) StopDue(now time.Time) bool {
	return c.State == StateRunning && c.Stop != nil && !now.Before(c.Stop.By)
}

// Stale reports whether the exchange's sweep must judge the contract at
// now: running, and its server silent since before silentSince or its
// client's stop due; or accepted and past its start deadline. (The SQL
// store asks the same of its indexes, in SQL.)
func (c Contract) Stale(now, silentSince time.Time) bool {
	switch c.State {
	case StateRunning:
		return c.LastSeen.Before(silentSince) || c.StopDue(now)
	case StateAccepted:
		return c.StartDeadline.Before(now)
	}
	return false
}

// Settle ends the contract, settled for reason at now on its last
// reading, and returns its charge and refund, at scale, the contract's
// currency's: what the ledger's capture must move.
func (c *Contract) Settle(reason Reason, scale int32, now time.Time) (Settlement, error) {
	var u Usage
	if c.Reading != nil {
		u = c.Reading.Usage()
	}
	st, err := Charge(c.Terms, u, scale)
	if err != nil {
		return Settlement{}, err
	}
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = StateSettled, reason, st.Charge, st.Refund, now.UTC()
	return st, nil
}

// Void ends the contract, voided for reason at now: nothing charged, the
// whole prepayment refunded.
func (c *Contract) Void(reason Reason, now time.Time) {
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = StateVoided, reason, decimal.Zero, c.Terms.Prepayment, now.UTC()
}

// MarkStuck records a failure to settle or void the contract at now,
// with the failure's message, and when to try again: wait(attempts)
// after now, attempts counting this failure.
func (c *Contract) MarkStuck(now time.Time, message string, wait func(attempts int) time.Duration) {
	st := Stuck{Since: now}
	if c.Stuck != nil {
		st = *c.Stuck
	}
	st.Attempts++
	st.Retry = now.Add(wait(st.Attempts))
	st.Error = message
	c.Stuck = &st
}
