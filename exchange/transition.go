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

// Every change of a contract's record is one of contract's methods
// (contract/lifecycle.go: Start, Record, AskStop, Settle, Void, MarkStuck);
// the functions of this file add the ledger operations each calls for and
// the exchange's own settings (its clock, its stop grace, its backoff).
// Each runs inside a Store.Update (or Open), which writes the record and
// applies the ledger operations it returns in one transaction. Opening a
// contract (accepted, with its escrow) is Store.Open's, in offer.go.

// started records that the server started the job (contract.Start).
func (h *House) started(c *contract.Contract, st protocol.Started) error {
	if !c.Start(contract.Began{At: st.At, GPUs: st.GPUs, Meter: st.Meter, Output: st.Output, Image: st.Image, Model: st.Model}, h.cfg.Now()) {
		return ErrNoChange
	}
	return nil
}

// stopAsked records a client's kill or suspend (action) of running
// contract c, heard at now, bounded by the stop grace (contract.AskStop).
func (h *House) stopAsked(c *contract.Contract, action contract.Reason, now time.Time) error {
	if !c.AskStop(action, now, h.cfg.StopGrace) {
		return ErrNoChange
	}
	return nil
}

// settle changes c to settled on its last reading and returns the capture
// that pays the server and refunds the rest, to commit together. scale is
// the contract's currency's.
func (h *House) settle(c *contract.Contract, reason contract.Reason, scale int32) ([]currency.Op, error) {
	st, err := c.Settle(reason, scale, h.cfg.Now())
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", c.ID, err)
	}
	cur := currency.Code(c.Terms.Currency)
	return append([]currency.Op{currency.Capture{
		Key: "settle/" + c.ID, Hold: currency.HoldID(c.ID), To: currency.RevenueID(cur, c.Server),
		Amount: st.Charge, Memo: "contract " + c.ID + " " + string(reason),
	}}, caps.Release(c, st.Charge)...), nil
}

// void changes an accepted contract to voided and returns the release of
// its whole prepayment.
func (h *House) void(c *contract.Contract, reason contract.Reason) []currency.Op {
	return voidAt(c, reason, h.cfg.Now())
}

// voidAt is void at now: the record's change and the ledger's release.
func voidAt(c *contract.Contract, reason contract.Reason, now time.Time) []currency.Op {
	c.Void(reason, now)
	return append([]currency.Op{currency.Void{Key: "void/" + c.ID, Hold: currency.HoldID(c.ID), Memo: "contract " + c.ID + " " + string(reason)}},
		caps.Release(c, decimal.Zero)...)
}

// markStuck records a failure to settle or void c with cause, and when to
// try again: the wait doubles from minBackoff (or SweepEvery) up to
// maxBackoff.
func (h *House) markStuck(c *contract.Contract, now time.Time, cause error) {
	c.MarkStuck(now, bourse.ErrorMessage(cause), func(attempts int) time.Duration {
		return backoff(max(minBackoff, h.cfg.SweepEvery), attempts)
	})
}
