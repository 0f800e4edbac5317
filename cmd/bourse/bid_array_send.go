package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/sim/report"
)

// defaultInFlight is how many of an array's offers are in negotiation at
// once unless --in-flight says otherwise. Measured (docs/benchmarks.md,
// BenchmarkOfferArray, 1,000 offers): without the exchange's limits 4
// took half the time of 1, and 8, 16 or 64 no less than 4; under its
// default limit (100 requests a second) 1 and 4 took the same, bound by
// the limit, while 8 and 16 took twice as long: offers refused at once
// in numbers go unanswered, each waiting its timeout.
const defaultInFlight = 4

// sendArray makes the offer of every task, at most o.inFlight in
// negotiation at once, taking the indexes in order; done is called as
// each task is answered. With a throttle (%N) there are N senders, and
// each holds its place while the contract (or waiting offer) it made is
// live, sending its next offer only once that has ended: at most N of
// the array's contracts are live at once, as Slurm's %N keeps N tasks
// running. Once every index is taken nobody waits for anything. The
// first offer that gets no answer stops the ones not yet sent: the
// exchange or NATS is away, and each would wait its timeout.
func (o *offerFlags) sendArray(ctx context.Context, c *bidder.Client, t contract.Terms, tasks []arrayTask, done func()) {
	senders := o.inFlight
	if o.throttle > 0 {
		senders = o.throttle
	}
	senders = min(senders, len(tasks))
	negotiating := make(chan struct{}, o.inFlight)
	// taken ends when the last index is taken: a sender holding its
	// place for a live contract then has nothing left to send.
	taken, allTaken := context.WithCancel(ctx)
	defer allTaken()
	pace := newPacer()
	var (
		next   atomic.Int64
		awayMu sync.Mutex
		away   error
		wg     sync.WaitGroup
	)
	isAway := func() error {
		awayMu.Lock()
		defer awayMu.Unlock()
		return away
	}
	for range senders {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= len(tasks) {
					return
				}
				if n == len(tasks)-1 {
					allTaken()
				}
				k := &tasks[n]
				if err := isAway(); err != nil {
					k.err = fmt.Errorf("not offered: %w", err)
					done()
					continue
				}
				negotiating <- struct{}{}
				k.OfferReply, k.err = pace.offer(ctx, c, k.RequestID, arrayTerms(t, k.Index, len(tasks)), o.wait)
				<-negotiating
				if k.err != nil && (ctx.Err() != nil || exitStatus(k.err) == exitUnavailable) {
					awayMu.Lock()
					if away == nil {
						away = k.err
					}
					awayMu.Unlock()
				}
				k.answered()
				done()
				if o.throttle > 0 && k.made() {
					var id string
					if k.Contract != nil {
						id = k.Contract.ID
					} else {
						id = k.Queued.ID // a waiting offer's id is its contract's
					}
					awaitEnd(taken, c, id)
				}
			}
		})
	}
	wg.Wait()
}

// awaitEnd returns once contract id has ended (settled or voided), or
// waiting offer id has left the book without becoming one, or ctx ends.
// Watch brings the contract's end as it happens; a waiting offer has no
// events of its own until it is matched, so it is looked for in the book
// every bidder.WatchPoll. Errors (the exchange away a moment) are waited
// out: letting the next offer go early would break the throttle.
func awaitEnd(ctx context.Context, c *bidder.Client, id string) {
	for ctx.Err() == nil {
		if ended(ctx, c, id) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(bidder.WatchPoll): //wallclock: pacing: a look at the book in real time
		}
	}
}

// ended watches contract id until it ends (true) or the watch does;
// it is true too for a waiting offer that left the book with no contract.
func ended(ctx context.Context, c *bidder.Client, id string) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	updates, err := c.Watch(wctx, id)
	if err == nil {
		for u := range updates {
			if u.Contract.State.Ended() {
				return true
			}
		}
		return false
	}
	if bourse.ErrorCode(err) != bourse.ENotFound {
		return false
	}
	if _, waits := waitingOffer(ctx, c, id); waits {
		return false
	}
	// Not a contract, not in the book: it left the book, unless it was
	// matched between the two readings.
	_, err = c.Contract(ctx, id)
	return bourse.ErrorCode(err) == bourse.ENotFound
}

// arrayBar shows how many of a long array's offers are answered, on a
// terminal only: a pipe or a log gets the lines at the end and nothing
// in between.
type arrayBar struct {
	p   *report.Progress
	bar *report.Bar
}

// minArrayBar is the smallest array that gets a bar: a short one is
// answered before a bar would be read.
const minArrayBar = 50

func newArrayBar(w io.Writer, tasks int) arrayBar {
	if tasks < minArrayBar || !report.IsTerminal(w) {
		return arrayBar{}
	}
	p := report.NewProgress(w, report.ProgressConfig{Terminal: true})
	return arrayBar{p: p, bar: p.Bar("offers", int64(tasks))}
}

// Add counts one offer answered; any goroutine may call it.
func (b arrayBar) Add() {
	if b.bar != nil {
		b.bar.Add(1)
	}
}

// Done draws the bar's end and waits for it.
func (b arrayBar) Done() {
	if b.bar != nil {
		b.bar.Done()
		b.p.Wait()
	}
}
