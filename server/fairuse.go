package server

import (
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// FairUse applies a shared cluster's fair-use rules (as in a lab's GPU
// booking system) before its base policy decides: bounds on a contract's
// time limit, on how many contracts one client runs at once, and a
// cooldown between the end of a client's contract and the start of its
// next (a booking's start_at, for a booking). Each rule is off at its zero
// value. The client's use comes from View.Client.
type FairUse struct {
	Base Policy
	// MinTimeLimit and MaxTimeLimit bound an offer's time limit. An offer
	// over the maximum is countered with the maximum (the prepayment
	// lowered where it then exceeds the maximum charge); one under the
	// minimum is rejected, since a counter asks for no more than the offer.
	MinTimeLimit, MaxTimeLimit time.Duration
	// MaxRunning is the most contracts a client may run (or claim for an accept) here at
	// once.
	MaxRunning int
	// Cooldown is how long after a client's contract ends (other than by
	// preemption) before the server takes its next.
	Cooldown time.Duration
}

var _ Policy = FairUse{}

// String names the policy in the server's heartbeats.
func (f FairUse) String() string {
	if s, ok := f.Base.(fmt.Stringer); ok {
		return "fair-use " + s.String()
	}
	return "fair-use"
}

// Validate checks the rules and the base policy.
func (f FairUse) Validate() error {
	const op = "server.FairUse.Validate"
	if f.Base == nil {
		return bourse.Errorf(bourse.EInvalid, op, "no base policy")
	}
	if f.MinTimeLimit < 0 || f.MaxTimeLimit < 0 || f.Cooldown < 0 || f.MaxRunning < 0 {
		return bourse.Errorf(bourse.EInvalid, op, "negative limit")
	}
	if f.MaxTimeLimit > 0 && f.MinTimeLimit > f.MaxTimeLimit {
		return bourse.Errorf(bourse.EInvalid, op, "minimum time limit %v is over the maximum %v", f.MinTimeLimit, f.MaxTimeLimit)
	}
	if v, ok := f.Base.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return fmt.Errorf("fair-use base: %w", err)
		}
	}
	return nil
}

// Decide rejects an offer that breaks a rule, counters one whose time limit
// is too long, and otherwise decides as Base, keeping only the counters
// that follow the rules.
func (f FairUse) Decide(offer contract.Terms, st View) Decision {
	if f.MaxRunning > 0 && st.Client.Running >= f.MaxRunning {
		return Decision{Reason: fmt.Sprintf("client %s has %d contracts here, the most one client may run at once", offer.Client, st.Client.Running)}
	}
	if f.Cooldown > 0 && !st.Client.LastEnd.IsZero() {
		// A booking's cooldown counts to its start.
		if next := st.Client.LastEnd.Add(f.Cooldown); later(st.Now, offer.StartAt).Before(next) {
			return Decision{Reason: fmt.Sprintf("client %s's last contract ended at %s; the next may start from %s (cooldown %v)",
				offer.Client, st.Client.LastEnd.UTC().Format(time.RFC3339), next.UTC().Format(time.RFC3339), f.Cooldown)}
		}
	}
	if f.MinTimeLimit > 0 && offer.TimeLimit < f.MinTimeLimit {
		return Decision{Reason: fmt.Sprintf("time limit %v is under the minimum %v", offer.TimeLimit, f.MinTimeLimit)}
	}
	if f.MaxTimeLimit > 0 && offer.TimeLimit > f.MaxTimeLimit {
		c := offer
		c.TimeLimit = f.MaxTimeLimit
		c.Prepayment = c.CappedPrepayment(st.Scale)
		d := Decision{Reason: fmt.Sprintf("time limit %v is over the maximum %v", offer.TimeLimit, f.MaxTimeLimit)}
		if !c.Prepayment.IsPositive() {
			return d // nothing valid to propose
		}
		// The base may want more of the shortened offer; then its
		// counters stand.
		bd := f.Base.Decide(c, st)
		if bd.Accept {
			d.Counters, d.ValidUntil = []contract.Terms{c}, st.Now.Add(DefaultCounterTTL)
			return d
		}
		bd.Reason = d.Reason + "; " + bd.Reason
		return f.keep(bd)
	}
	return f.keep(f.Base.Decide(offer, st))
}

// keep drops the base's counters that break the time-limit rules.
func (f FairUse) keep(d Decision) Decision {
	if d.Accept || len(d.Counters) == 0 {
		return d
	}
	var ok []contract.Terms
	for _, c := range d.Counters {
		if c.TimeLimit >= f.MinTimeLimit && (f.MaxTimeLimit == 0 || c.TimeLimit <= f.MaxTimeLimit) {
			ok = append(ok, c)
		}
	}
	d.Counters = ok
	return d
}
