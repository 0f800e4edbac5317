package exchange

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Every change of a contract's record is one of the functions of this
// file, and each runs inside a Store.Update (or Open), which writes the
// record and applies the ledger operations it returns in one transaction:
//
//	accepted  → running   started (the server says so), record (a first reading)
//	running   → running   record (a newer, believable reading)
//	accepted, running → settled   settle (the capture: charge to the server, the rest back)
//	accepted, running → voided    void (the whole prepayment back)
//	running   → running   stopAsked (a client's kill or suspend: the bound of what is believed)
//	accepted, running             markStuck (a failure to settle or void, and when to retry)
//
// Opening a contract (accepted, with its escrow) is Store.Open's, in
// offer.go.

// started records that the server started the job: accepted → running.
// A start reported again changes nothing but the GPUs, the meter and the
// output's caps, if a reading came first and left them unknown.
func (h *House) started(c *contract.Contract, st protocol.Started) error {
	if c.State != contract.StateAccepted {
		changed := false
		if c.State == contract.StateRunning && c.GPUs == nil && st.GPUs != nil {
			c.GPUs, changed = st.GPUs, true
		}
		if c.State == contract.StateRunning && c.Meter == "" && st.Meter != "" {
			c.Meter, changed = st.Meter, true
		}
		if c.State == contract.StateRunning && c.Output == (contract.OutputCaps{}) && st.Output != (contract.OutputCaps{}) {
			c.Output, changed = st.Output, true
		}
		if !changed {
			return ErrNoChange
		}
		return nil
	}
	c.State, c.StartedAt, c.GPUs, c.LastSeen = contract.StateRunning, st.At.UTC(), st.GPUs, h.cfg.Now().UTC()
	c.Meter, c.Output = st.Meter, st.Output
	return nil
}

// record makes r, checked and believed, the contract's latest reading; a
// first reading of a contract still accepted shows it running, started at
// at − t.
func (h *House) record(c *contract.Contract, r contract.Reading, now time.Time) {
	c.Reading, c.LastSeen = &r, now
	if c.State == contract.StateAccepted {
		c.State, c.StartedAt = contract.StateRunning, r.At.Add(-time.Duration(r.T)).UTC()
	}
}

// stopAsked records a client's kill or suspend (action) of running
// contract c, heard at now: what the exchange believes of its job ends
// StopGrace later (contract.Stop), whatever its server does. A kill after a
// suspend makes it a kill, its bound unchanged; any other stop asked
// again changes nothing.
func (h *House) stopAsked(c *contract.Contract, action contract.Reason, now time.Time) error {
	switch {
	case c.State != contract.StateRunning:
		return ErrNoChange
	case c.Stop == nil:
		c.Stop = &contract.Stop{Reason: action, At: now, By: now.Add(h.cfg.StopGrace)}
	case c.Stop.Reason != contract.ReasonKilled && action == contract.ReasonKilled:
		st := *c.Stop
		st.Reason = action
		c.Stop = &st
	default:
		return ErrNoChange
	}
	return nil
}

// stopDue reports whether what the exchange believes of running
// contract c ended by now: its client stopped it, and the stop grace has
// passed.
func stopDue(c *contract.Contract, now time.Time) bool {
	return c.State == contract.StateRunning && c.Stop != nil && !now.Before(c.Stop.By)
}

// settle changes c to settled on its last reading and returns the capture
// that pays the server and refunds the rest, to commit together. scale is
// the contract's currency's.
func (h *House) settle(c *contract.Contract, reason contract.Reason, scale int32) ([]currency.Op, error) {
	var u contract.Usage
	if c.Reading != nil {
		u = c.Reading.Usage()
	}
	st, err := contract.Charge(c.Terms, u, scale)
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", c.ID, err)
	}
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = contract.StateSettled, reason, st.Charge, st.Refund, h.cfg.Now().UTC()
	cur := currency.Code(c.Terms.Currency)
	return append([]currency.Op{currency.Capture{
		Key: "settle/" + c.ID, Hold: currency.HoldID(c.ID), To: currency.RevenueID(cur, c.Server),
		Amount: st.Charge, Memo: "contract " + c.ID + " " + string(reason),
	}}, caps.Release(c, st.Charge)...), nil
}

// void changes an accepted contract to voided and returns the release of
// its whole prepayment.
func (h *House) void(c *contract.Contract, reason contract.Reason) []currency.Op {
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = contract.StateVoided, reason, decimal.Zero, c.Terms.Prepayment, h.cfg.Now().UTC()
	return append([]currency.Op{currency.Void{Key: "void/" + c.ID, Hold: currency.HoldID(c.ID), Memo: "contract " + c.ID + " " + string(reason)}},
		caps.Release(c, decimal.Zero)...)
}

// markStuck records a failure to settle or void c with cause, and when to
// try again: the wait doubles from minBackoff (or SweepEvery) up to
// maxBackoff.
func (h *House) markStuck(c *contract.Contract, now time.Time, cause error) {
	st := contract.Stuck{Since: now}
	if c.Stuck != nil {
		st = *c.Stuck
	}
	st.Attempts++
	st.Retry = now.Add(backoff(max(minBackoff, h.cfg.SweepEvery), st.Attempts))
	st.Error = bourse.ErrorMessage(cause)
	c.Stuck = &st
}
