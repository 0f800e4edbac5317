package bidder

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// pacer slows an array's offers once the exchange has said they come
// faster than it lets one client's requests in (100 a second by default,
// the operator's to change, so not known here). The exchange answers
// refusals only at the client's own rate and drops the rest unanswered,
// each then costing its sender a whole timeout: 8 or 16 offers refused
// and sent again at once lose more time than they save (measured:
// docs/benchmarks.md). So after a refusal the rest of the array goes one
// offer at a time (the exchange's limit does not change while it runs),
// spaced by a gap that every refusal widens (at least to the wait it
// names, doubling) and every answer narrows a little; with no refusal
// there is neither: a market that lets the offers in takes them as fast
// as ArrayOptions.InFlight sends them.
type pacer struct {
	serial chan struct{} // one token: while slow, one offer at a time

	mu   sync.Mutex
	slow bool // refused once: one offer at a time from then on
	gap  time.Duration
	next time.Time // the earliest the next offer goes
}

// Bounds of the gap: below minGap it closes; maxGap is a request a
// second, the slowest an exchange's limit could want.
const (
	minGap = 50 * time.Microsecond
	maxGap = time.Second
)

func newPacer() *pacer { return &pacer{serial: make(chan struct{}, 1)} }

// offer makes one offer in its turn, and sends it again in a later turn
// for as long as the exchange answers rate_limited: nothing of a refused
// request was done, and its request id stays the same.
func (p *pacer) offer(ctx context.Context, c *Client, requestID string, t contract.Terms, wait time.Duration) (protocol.OfferReply, error) {
	for {
		p.mu.Lock()
		slow := p.slow
		p.mu.Unlock()
		if slow {
			select {
			case p.serial <- struct{}{}:
			case <-ctx.Done():
				return protocol.OfferReply{}, context.Cause(ctx)
			}
		}
		if err := p.turn(ctx); err != nil {
			if slow {
				<-p.serial
			}
			return protocol.OfferReply{}, err
		}
		reply, err := c.OfferWait(ctx, requestID, t, wait)
		if slow {
			<-p.serial
		}
		var be *bourse.Error
		if !errors.As(err, &be) || be.Code != bourse.ERateLimited {
			p.answered()
			return reply, err
		}
		p.refused(time.Duration(be.RetryAfterMS) * time.Millisecond)
	}
}

// turn waits for the next free moment and takes it.
func (p *pacer) turn(ctx context.Context) error {
	p.mu.Lock()
	now := time.Now() //wallclock: pacing: spaces requests in real time
	at := p.next
	if at.Before(now) {
		at = now
	}
	p.next = at.Add(p.gap)
	p.mu.Unlock()
	if d := at.Sub(now); d > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(d): //wallclock: pacing: spaces requests in real time
		}
	}
	return nil
}

func (p *pacer) refused(wait time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.slow = true
	p.gap = min(max(2*p.gap, wait, time.Millisecond), maxGap)
	if at := time.Now().Add(wait); at.After(p.next) { //wallclock: pacing: spaces requests in real time
		p.next = at
	}
}

func (p *pacer) answered() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gap -= p.gap / 16; p.gap < minGap {
		p.gap = 0
	}
}
