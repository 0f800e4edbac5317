package server

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Observer is a policy that keeps state and learns from what its server
// observes (DESIGN.md, revision 5: an Observe beside Decide). The node
// tells it every outcome, with its lock held and in the order they
// happen, so that a run of the simulator tells it the same things in the
// same order every time; Decide and Ask still only read. Observe must not
// call the node.
type Observer interface {
	// Observe learns from an outcome, and reports whether the policy's
	// ask changed: the driver then says so to the exchange (a heartbeat)
	// at once, since routing follows asks.
	Observe(o Outcome) (askChanged bool)
	// Next is when the policy next wants to be told the time (an outcome
	// of kind OutcomeTime): a node's Wake counts it, so that a driver that
	// ticks the node only when something is due still ticks it then.
	// Zero: never.
	Next() time.Time
}

// OutcomeKind says what happened.
type OutcomeKind int

const (
	// OutcomeTime is only the time passing: a tick.
	OutcomeTime OutcomeKind = iota
	// OutcomeOffer is an offer decided (not a quote): accepted or not,
	// a counter-offer of the server's taken or not, counters made.
	OutcomeOffer
	// OutcomeStart is a contract's job started: work won.
	OutcomeStart
	// OutcomeEnd is a contract's job stopped, with its final reading and
	// what its terms charge for it.
	OutcomeEnd
)

// Outcome is one thing a server observed. Every outcome says the time and
// the GPUs free after it, so that a learner can tell the time its server
// had room from the time it was full: a full server refuses offers for
// want of GPUs, which says nothing of its price.
type Outcome struct {
	Kind OutcomeKind
	Now  time.Time
	// GPUs is the server's GPUs; Free those neither running a job nor
	// claimed for an accept, after the outcome.
	GPUs, Free int

	// Contract is the contract started or ended; Terms its terms (or the
	// offer's, for OutcomeOffer).
	Contract string
	Terms    contract.Terms

	// OutcomeOffer: Accepted, and Counter when the offer was a
	// counter-offer of the server's, taken; Countered is how many
	// counter-offers the server made instead.
	Accepted  bool
	Counter   bool
	Countered int

	// OutcomeEnd: the final reading's usage, and what the terms charge
	// for it, capped at the prepayment (the exchange settles on the same
	// reading, within what it believes of the server).
	Usage  contract.Usage
	Charge decimal.Decimal
}

// observerOf is the Observer in a policy stack (a Learning under
// Preempting, Bookings or FairUse), or nil.
func observerOf(p Policy) Observer {
	switch q := p.(type) {
	case Observer:
		return q
	case Preempting:
		return observerOf(q.Base)
	case Bookings:
		return observerOf(q.Base)
	case FairUse:
		return observerOf(q.Base)
	}
	return nil
}

// LearnerOf is the Learning policy in a stack, or nil: what a driver
// keeps across restarts (Learning.State) and shows (Learning.Beliefs).
func LearnerOf(p Policy) *Learning {
	l, _ := observerOf(p).(*Learning)
	return l
}

// ForServer gives a server its own copy of a policy that keeps state: a
// scenario's replicas are built from one policy, and a learner shared by
// several servers would learn from all of them at once. seed is the
// run's; the copy's own seed mixes in the server's id, so that replicas
// explore apart. A stack without a learner is returned as it is.
func ForServer(p Policy, id string, seed uint64) Policy {
	switch q := p.(type) {
	case *Learning:
		return q.fork(id, seed)
	case Preempting:
		q.Base = ForServer(q.Base, id, seed)
		return q
	case Bookings:
		q.Base = ForServer(q.Base, id, seed)
		return q
	case FairUse:
		q.Base = ForServer(q.Base, id, seed)
		return q
	}
	return p
}

// observe tells the policy an outcome. n.mu is held.
func (n *Node) observe(o Outcome) bool {
	if n.observer == nil {
		return false
	}
	o.GPUs, o.Free = len(n.cfg.GPUs), len(n.cfg.GPUs)-len(n.owner)
	return n.observer.Observe(o)
}

// observeEnd tells the learner of a run's end: its final reading and what
// its terms charge for it. n.mu is held.
func (n *Node) observeEnd(r *run, now time.Time, rd contract.Reading) {
	u := rd.Usage()
	charge, err := contract.Due(r.terms, u, n.cfg.Currency.Scale)
	if err != nil {
		// The node priced this reading as the job ran (limitReached); a
		// reading it cannot price earns the learner nothing.
		n.log.Error("price a final reading for the policy", "contract", r.id, "err", err)
		charge = decimal.Zero
	}
	n.observe(Outcome{Kind: OutcomeEnd, Now: now, Contract: r.id, Terms: r.terms, Usage: u,
		Charge: decimal.Min(charge, r.terms.Prepayment)})
}
