package bidder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
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
	// RequestID prefixes each offer's request id (RequestID-0, RequestID-0-take,
	// RequestID-1, …), so that a negotiation run again with the same one
	// cannot escrow twice for the same round. The job's name if empty.
	RequestID string
	Rounds    int           // offers before giving up; 6 if zero
	Pause     time.Duration // after a round without a contract, Pause·round; 200ms if zero
	// Adjust, if set, fixes what the strategy does not decide (the job to
	// run, a server, a prepayment) in each bid before it is offered.
	Adjust func(*contract.Terms)
	// Report, if set, hears each round's outcome.
	Report func(Round)
	Now    func() time.Time // time.Now if nil
}

// Round is one offer of a negotiation and how it fared.
type Round struct {
	N     int
	Terms contract.Terms
	Reply protocol.OfferReply
	Took  *trade.Counter // the counter-offer the strategy took, if any
	Err   error
}

// Negotiate runs n and returns the contract. An error that another bid
// cannot cure (no funds, no matching server, terms refused) ends it at
// once; a counter-offer whose GPUs were taken meanwhile only ends its round.
// After Rounds offers it fails with an error that wraps ErrGaveUp.
func (c *Client) Negotiate(ctx context.Context, n Negotiation) (trade.Contract, error) {
	if n.Rounds <= 0 {
		n.Rounds = 6
	}
	if n.Pause <= 0 {
		n.Pause = 200 * time.Millisecond
	}
	if n.Now == nil {
		n.Now = time.Now
	}
	prefix := n.RequestID
	if prefix == "" {
		prefix = n.Job.Name
	}
	report := func(r Round) {
		if n.Report != nil {
			n.Report(r)
		}
	}
	countered := 0
	for round := range n.Rounds {
		t := n.Strategy.Bid(n.Job, round, n.Now())
		if n.Adjust != nil {
			n.Adjust(&t)
		}
		id := fmt.Sprintf("%s-%d", prefix, round)
		began := n.Now()
		reply, err := c.Offer(ctx, id, t)
		r := Round{N: round, Terms: t, Reply: reply, Err: err}
		if err != nil {
			report(r)
			return trade.Contract{}, err
		}
		if reply.Contract != nil {
			n.Strategy.Observe(true, n.Now().Sub(began))
			report(r)
			return *reply.Contract, nil
		}
		if len(reply.Counters) > 0 {
			countered++
		}
		if k := n.Strategy.Take(n.Job, reply.Counters, n.Now()); k != nil {
			r.Took = k
			got, err := c.Take(ctx, id+"-take", *k)
			switch {
			case err == nil && got.Contract != nil:
				n.Strategy.Observe(true, n.Now().Sub(began))
				r.Reply = got
				report(r)
				return *got.Contract, nil
			case err != nil && bourse.ErrorCode(err) != bourse.ECapacityGone:
				r.Err = err
				report(r)
				return trade.Contract{}, err
			}
			r.Err = err
		}
		n.Strategy.Observe(false, n.Now().Sub(began))
		report(r)
		if round < n.Rounds-1 {
			select {
			case <-ctx.Done():
				return trade.Contract{}, ctx.Err()
			case <-time.After(n.Pause * time.Duration(round+1)):
			}
		}
	}
	return trade.Contract{}, fmt.Errorf("%w after %d offers (%d countered): raise the value or try again later", ErrGaveUp, n.Rounds, countered)
}
