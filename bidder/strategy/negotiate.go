package strategy

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Exchange is what a negotiation needs of the market: make an offer and
// take a counter-offer, each under a request id that makes a retry safe.
// The NATS client (*bidder.Client) is one; an in-process exchange is
// another.
type Exchange interface {
	Offer(ctx context.Context, requestID string, t contract.Terms) (protocol.OfferReply, error)
	Take(ctx context.Context, requestID string, k contract.Counter) (protocol.OfferReply, error)
}

// Clock is the time a negotiation runs on: Now reads it, Sleep waits d on
// it or until ctx ends, and then returns ctx's error.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Negotiate runs n against ex until a contract, which it returns, or the
// negotiation fails: by the Negotiator's rules (an error that another bid
// cannot cure ends it at once; a counter-offer whose GPUs were taken
// meanwhile only ends its round; after Rounds offers the error wraps
// ErrGaveUp), or because ctx ended during a pause. It waits between rounds
// on n.Clock, the wall clock if nil.
func Negotiate(ctx context.Context, ex Exchange, n Negotiation) (protocol.ContractView, error) {
	clock := n.Clock
	if clock == nil {
		clock = wallClock{}
	}
	g := NewNegotiator(n)
	for {
		a := g.Next(clock.Now())
		switch a.Op {
		case Offer:
			reply, err := ex.Offer(ctx, a.RequestID, a.Terms)
			g.Answer(clock.Now(), reply, err)
		case Take:
			reply, err := ex.Take(ctx, a.RequestID, a.Counter)
			g.Answer(clock.Now(), reply, err)
		case Wait:
			if err := clock.Sleep(ctx, a.Wait); err != nil {
				return protocol.ContractView{}, err
			}
		case Done:
			return a.Contract, nil
		default:
			return protocol.ContractView{}, a.Err
		}
	}
}

// wallClock is real time, for a negotiation with a real exchange: the one
// place in this package that reads it.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() } //wallclock: wallClock is the Clock of a real negotiation

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d) //wallclock: wallClock is the Clock of a real negotiation
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
