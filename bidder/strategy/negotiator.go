package strategy

import (
	"errors"
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// ErrGaveUp is the error of a negotiation that used up its rounds without a
// contract.
var ErrGaveUp = errors.New("gave up")

// Negotiation is one job traded with a strategy: offer what the strategy
// bids, take the counter-offer it picks, or bid again after a pause, until
// a contract or Rounds offers.
type Negotiation struct {
	Strategy Strategy
	Job      Job
	// RequestID prefixes each offer's request id (RequestID-0,
	// RequestID-0-take, RequestID-1, …), so that a negotiation run again
	// with the same one cannot escrow twice for the same round. The job's
	// name if empty.
	RequestID string
	Rounds    int           // offers before giving up; 6 if zero
	Pause     time.Duration // after a round without a contract, Pause·round; 200ms if zero
	// Adjust, if set, fixes what the strategy does not decide (the job to
	// run, a server, a prepayment) in each bid before it is offered.
	Adjust func(*contract.Terms)
	// Report, if set, hears each round's outcome.
	Report func(Round)
	// Clock is what Negotiate reads and sleeps on; the wall clock if nil.
	// A Negotiator does not use it: its caller gives it the time.
	Clock Clock
}

// Round is one offer of a negotiation and how it fared.
type Round struct {
	N     int
	Terms contract.Terms
	// Reply is the offer's reply, or the take's where taking a
	// counter-offer got the contract.
	Reply protocol.OfferReply
	Took  *contract.Counter // the counter-offer the strategy took, if any
	Err   error
}

// Op is what a Negotiator says to do next.
type Op int

const (
	// Offer: make an offer of Action.Terms under Action.RequestID, and
	// Answer with the reply.
	Offer Op = iota + 1
	// Take: take the counter-offer Action.Counter under Action.RequestID,
	// and Answer with the reply.
	Take
	// Wait: nothing to do for Action.Wait; then ask Next again.
	Wait
	// Done: the negotiation got Action.Contract.
	Done
	// Failed: the negotiation ended without a contract, for Action.Err.
	Failed
)

func (o Op) String() string {
	switch o {
	case Offer:
		return "offer"
	case Take:
		return "take"
	case Wait:
		return "wait"
	case Done:
		return "done"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Action is the next step of a negotiation: Op says which, and which of the
// other fields it uses.
type Action struct {
	Op        Op
	RequestID string                // Offer, Take
	Terms     contract.Terms        // Offer
	Counter   contract.Counter      // Take
	Wait      time.Duration         // Wait: from the now given to Next
	Contract  protocol.ContractView // Done
	Err       error                 // Failed
}

// A Negotiator runs a Negotiation's rules one step at a time, with no I/O
// and no waiting: Next says what to do, Answer tells it what the exchange
// replied. It reads the time only from the now it is given, so a simulator
// drives it on a virtual clock and Negotiate on a real one.
//
// The rules: each round offers what the strategy bids (after Adjust).
// A contract ends the negotiation. Counter-offers go to the strategy's
// Take; taking one that gets the contract ends it, one whose GPUs were
// taken meanwhile (capacity_gone) only ends the round. Any other error
// ends the negotiation at once: no funds, terms refused, no matching
// server cannot be cured by another bid, and an offer that got no answer
// (unavailable, deadline_exceeded) may have gone through, so another
// round under a new request id could escrow twice. After a round without
// a contract the strategy observes the rejection and the negotiation
// waits Pause·round before the next; after Rounds it fails with an error
// that wraps ErrGaveUp.
//
// A Negotiator is not safe for concurrent use.
type Negotiator struct {
	n         Negotiation
	prefix    string
	step      step
	round     int
	began     time.Time // when the round's offer was made
	resume    time.Time // when the next round may begin
	r         Round     // the round under way
	countered int       // rounds that drew counter-offers
	action    Action    // the request outstanding, or the outcome
}

type step int

const (
	stepBid     step = iota // the round's offer is still to be made
	stepOffered             // the offer is out
	stepTaking              // the take of a counter-offer is out
	stepPaused              // between rounds, until resume
	stepOver                // action holds the outcome
)

// NewNegotiator starts a negotiation: its first Next is an offer.
func NewNegotiator(n Negotiation) *Negotiator {
	if n.Rounds <= 0 {
		n.Rounds = 6
	}
	if n.Pause <= 0 {
		n.Pause = 200 * time.Millisecond
	}
	prefix := n.RequestID
	if prefix == "" {
		prefix = n.Job.Name
	}
	return &Negotiator{n: n, prefix: prefix}
}

// Next says what to do at now. Until Answer is called it says the same
// (an Offer or Take again, under the same request id, which makes a retry
// safe); a Wait shrinks as now passes and turns into the next round's
// Offer when it is over; Done and Failed stay.
func (g *Negotiator) Next(now time.Time) Action {
	if g.step == stepPaused {
		if now.Before(g.resume) {
			return Action{Op: Wait, Wait: g.resume.Sub(now)}
		}
		g.round++
		g.step = stepBid
	}
	if g.step == stepBid {
		t := g.n.Strategy.Bid(g.n.Job, g.round, now)
		if g.n.Adjust != nil {
			g.n.Adjust(&t)
		}
		g.r = Round{N: g.round, Terms: t}
		g.began = now
		g.action = Action{Op: Offer, RequestID: fmt.Sprintf("%s-%d", g.prefix, g.round), Terms: t}
		g.step = stepOffered
	}
	return g.action
}

// Answer tells the negotiator, at now, the exchange's reply to the Offer
// or Take that Next asked for, or the error that came instead. An answer
// when none is outstanding is ignored.
func (g *Negotiator) Answer(now time.Time, reply protocol.OfferReply, err error) {
	switch g.step {
	case stepOffered:
		g.r.Reply, g.r.Err = reply, err
		switch {
		case err != nil:
			g.endRound(now, err)
		case reply.Contract != nil:
			g.succeed(now, *reply.Contract)
		default:
			if len(reply.Counters) > 0 {
				g.countered++
			}
			if k := g.n.Strategy.Take(g.n.Job, reply.Counters, now); k != nil {
				g.r.Took = k
				g.action = Action{Op: Take, RequestID: g.action.RequestID + "-take", Counter: *k}
				g.step = stepTaking
				return
			}
			g.endRound(now, nil)
		}
	case stepTaking:
		if err == nil && reply.Contract != nil {
			g.r.Reply = reply
			g.succeed(now, *reply.Contract)
			return
		}
		g.r.Err = err
		g.endRound(now, err)
	}
}

func (g *Negotiator) succeed(now time.Time, c protocol.ContractView) {
	g.n.Strategy.Observe(true, now.Sub(g.began))
	g.report()
	g.over(Action{Op: Done, Contract: c})
}

// endRound ends a round without a contract, and the negotiation too if err
// is one that another round cannot cure or the rounds are used up.
func (g *Negotiator) endRound(now time.Time, err error) {
	if err != nil && bourse.ErrorCode(err) != bourse.ECapacityGone {
		g.report()
		g.over(Action{Op: Failed, Err: err})
		return
	}
	g.n.Strategy.Observe(false, now.Sub(g.began))
	g.report()
	if g.round+1 >= g.n.Rounds {
		g.over(Action{Op: Failed, Err: fmt.Errorf("%w after %d offers (%d countered): raise the value or try again later", ErrGaveUp, g.n.Rounds, g.countered)})
		return
	}
	g.resume = now.Add(g.n.Pause * time.Duration(g.round+1))
	g.step = stepPaused
}

func (g *Negotiator) report() {
	if g.n.Report != nil {
		g.n.Report(g.r)
	}
}

func (g *Negotiator) over(a Action) {
	g.action = a
	g.step = stepOver
}
