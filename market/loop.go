package market

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// bidderLoop is one client trading: it makes up jobs, bids for them with
// its strategy, and follows each contract to its settlement.
type bidderLoop struct {
	m      *Market
	spec   ClientSpec
	client *bidder.Client
	ends   *endings

	mu   sync.Mutex // guards rng and jobs: a client runs several jobs at once
	rng  *rand.Rand
	jobs int
}

// run trades jobs one after another until the market closes; a client
// runs Parallel of these.
func (b *bidderLoop) run(ctx context.Context) {
	for !b.m.Tally.closing.Load() && ctx.Err() == nil {
		b.trade(ctx, b.nextJob())
		b.mu.Lock()
		think := time.Duration(100+b.rng.IntN(300)) * time.Millisecond
		b.mu.Unlock()
		b.sleep(ctx, think)
	}
}

func (b *bidderLoop) nextJob() bidder.Job {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.jobs++
	s := b.spec
	half := float64(s.Runtime) / 2 * b.m.cfg.JobScale
	runtime := time.Duration(half + b.rng.Float64()*half).Round(10 * time.Millisecond)
	return bidder.Job{
		Name: fmt.Sprintf("%s-job%d", s.ID, b.jobs), Currency: string(Currency.Code), Scale: Currency.Scale,
		GPUs: 1 + b.rng.IntN(s.MaxGPUs), Class: contract.Class{Model: s.Model},
		Runtime: runtime, Utilization: decimal.New(int64(50+b.rng.IntN(51)), -2), Value: s.Value,
	}
}

// trade bids for one job until a contract runs it or the strategy has
// been turned down too often.
func (b *bidderLoop) trade(ctx context.Context, job bidder.Job) {
	t := b.m.Tally
	for rejected := 0; rejected < 6 && !t.closing.Load(); rejected++ {
		terms := b.spec.Strategy.Bid(job, rejected, time.Now())
		reqID := fmt.Sprintf("%s-%d", job.Name, rejected)
		began := time.Now()
		reply, err := b.client.Offer(ctx, reqID, terms)
		t.offered(b.spec.ID)
		if err != nil {
			t.failed(b.spec.ID, err)
			switch bourse.ErrorCode(err) {
			case bourse.EInsufficientFunds:
				b.sleep(ctx, time.Second) // broke for this job; maybe a smaller one fits
				return
			case bourse.EInvalidOffer, bourse.EInvalidCurve, bourse.ENoMatch:
				return // this job cannot be offered as the strategy sees it
			}
			b.sleep(ctx, 200*time.Millisecond)
			continue
		}
		if reply.Contract != nil {
			b.spec.Strategy.Observe(true, time.Since(began))
			b.follow(ctx, *reply.Contract)
			return
		}
		if k := b.spec.Strategy.Take(job, reply.Counters, time.Now()); k != nil {
			got, err := b.client.Take(ctx, reqID+"-take", *k)
			if err == nil && got.Contract != nil {
				t.tookCounter(b.spec.ID)
				b.spec.Strategy.Observe(true, time.Since(began))
				b.follow(ctx, *got.Contract)
				return
			}
			if err != nil {
				t.failed(b.spec.ID, err)
			}
		}
		t.rejectedOffer(b.spec.ID, len(reply.Counters) > 0)
		b.spec.Strategy.Observe(false, time.Since(began))
		b.sleep(ctx, time.Duration(150*(rejected+1))*time.Millisecond)
	}
}

// follow waits for the contract's settlement, from its events, or from the
// record itself if an event was missed.
func (b *bidderLoop) follow(ctx context.Context, c trade.Contract) {
	t := b.m.Tally
	t.opened(c)
	ended := b.ends.wait(c.ID)
	defer b.ends.forget(c.ID)
	deadline := time.After(c.Terms.TimeLimit + 20*time.Second)
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case got := <-ended:
			t.closed(got)
			return
		case <-poll.C:
			if got, err := b.client.Contract(ctx, c.ID); err == nil && (got.State == trade.StateSettled || got.State == trade.StateVoided) {
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
	waiters map[string]chan trade.Contract
	early   map[string]trade.Contract // ended before anyone waited
}

func newEndings(ctx context.Context, events <-chan protocol.Event) *endings {
	e := &endings{waiters: map[string]chan trade.Contract{}, early: map[string]trade.Contract{}}
	go func() {
		for ev := range events {
			if ev.Type == protocol.EventSettled || ev.Type == protocol.EventVoided {
				e.end(ev.Contract)
			}
		}
	}()
	return e
}

func (e *endings) end(c trade.Contract) {
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

func (e *endings) wait(id string) <-chan trade.Contract {
	e.mu.Lock()
	defer e.mu.Unlock()
	w := make(chan trade.Contract, 1)
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
