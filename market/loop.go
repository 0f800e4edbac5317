package market

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// bidderLoop is one client trading: it makes up jobs, bids for them with
// its strategy, and follows each contract to its settlement.
type bidderLoop struct {
	m      *Market
	spec   scenario.ClientSpec
	client *bidder.Client
	ends   *endings

	mu   sync.Mutex // guards rng and jobs: a client runs several jobs at once
	rng  *rand.Rand
	jobs int
}

// run trades jobs one after another until the market closes; a client
// runs Parallel of these.
func (b *bidderLoop) run(ctx context.Context) {
	var backoff time.Duration
	for !b.m.Tally.closing.Load() && ctx.Err() == nil {
		if b.trade(ctx, b.nextJob()) {
			// Short of money, or over a cap: asking again at once would
			// only be refused again. Wait for an allowance, a contract's
			// end or a new period, longer each time in a row.
			backoff = min(max(2*backoff, refusedPause), maxRefusedPause)
			b.sleep(ctx, backoff)
		} else {
			backoff = 0
		}
		b.mu.Lock()
		think := time.Duration(100+b.rng.IntN(300)) * time.Millisecond
		b.mu.Unlock()
		b.sleep(ctx, think)
	}
}

// A bot refused for want of money or by a cap waits refusedPause before
// its next job, twice as long after each refusal in a row, at most
// maxRefusedPause.
const (
	refusedPause    = time.Second
	maxRefusedPause = 16 * time.Second
)

func (b *bidderLoop) nextJob() strategy.Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.jobs++
	return b.spec.Job(b.rng, b.jobs, b.m.cfg.JobScale)
}

// trade negotiates one job with the client's strategy, and follows its
// contract to the settlement. It reports whether the market refused the
// job for the client's money or caps (insufficient_funds, cap_exceeded):
// then the client pauses before the next, which may be smaller.
func (b *bidderLoop) trade(ctx context.Context, job strategy.Job) (refused bool) {
	k, err := strategy.Negotiate(ctx, open{Exchange: b.client, closing: &b.m.Tally.closing, told: b.m.Told, client: b.spec.ID}, strategy.Negotiation{
		Strategy: b.spec.Strategy, Job: job, Pause: 150 * time.Millisecond,
		Report: func(r strategy.Round) {
			if !errors.Is(r.Err, errClosed) {
				b.m.Tally.round(b.spec.ID, r)
			}
		},
	})
	switch bourse.ErrorCode(err) {
	case "":
		b.follow(ctx, k)
	case bourse.EInsufficientFunds, bourse.ECapExceeded:
		return true
	}
	return false
}

// errClosed ends a negotiation once the market closes.
var errClosed = errors.New("market: closed to new offers")

// open is the exchange while the market trades: once closing is set, it
// makes no new offer, though a counter-offer may still be taken. It notes
// what the client was told for each request (told.go).
type open struct {
	strategy.Exchange
	closing *atomic.Bool
	told    *Told
	client  string
}

// follow waits for the contract's settlement, from its events, or from the
// record itself if an event was missed.
func (b *bidderLoop) follow(ctx context.Context, c protocol.ContractView) {
	t := b.m.Tally
	t.opened(c)
	ended := b.ends.wait(c.ID)
	defer b.ends.forget(c.ID)
	deadline := time.After(c.Terms.TimeLimit + 20*time.Second)
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case ch := <-ended:
			c.Apply(ch) // the event carries what changed
			t.closed(c)
			return
		case <-poll.C:
			if got, err := b.client.Contract(ctx, c.ID); err == nil && got.State.Ended() {
				t.closed(got)
				return
			}
		case <-deadline:
			t.failed(b.spec.ID, fmt.Errorf("contract %s never settled", c.ID))
			return
		case <-ctx.Done():
			return
		}
	}
}

func (b *bidderLoop) sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// endings hands each contract's settled or voided event to the goroutine
// that follows the contract, whichever comes first.
type endings struct {
	mu      sync.Mutex
	waiters map[string]chan protocol.ContractChange
	early   map[string]protocol.ContractChange // ended before anyone waited
}

func newEndings(ctx context.Context, events <-chan protocol.Event) *endings {
	e := &endings{waiters: map[string]chan protocol.ContractChange{}, early: map[string]protocol.ContractChange{}}
	go func() {
		for ev := range events {
			if (ev.Type == protocol.EventSettled || ev.Type == protocol.EventVoided) && ev.Contract != nil {
				e.end(*ev.Contract)
			}
		}
	}()
	return e
}

func (e *endings) end(c protocol.ContractChange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if w, ok := e.waiters[c.ID]; ok {
		select {
		case w <- c:
		default:
		}
		return
	}
	e.early[c.ID] = c
}

func (e *endings) wait(id string) <-chan protocol.ContractChange {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := make(chan protocol.ContractChange, 1)
	if c, ok := e.early[id]; ok {
		delete(e.early, id)
		w <- c
	}
	e.waiters[id] = w
	return w
}

func (e *endings) forget(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.waiters, id)
}
