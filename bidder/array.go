package bidder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// DefaultInFlight is how many of an array's offers are in negotiation at
// once unless ArrayOptions.InFlight says otherwise. Measured
// (docs/benchmarks.md, BenchmarkOfferArray, 1,000 offers): without the
// exchange's limits 4 took half the time of 1, and 8, 16 or 64 no less
// than 4; under its default limit (100 requests a second) 1 and 4 took
// the same, bound by the limit, while 8 and 16 took twice as long:
// offers refused at once in numbers go unanswered, each waiting its
// timeout.
const DefaultInFlight = 4

// ArrayOptions shape how OfferArray sends an array's offers. The zero
// value works: DefaultInFlight at once, no throttle, no wait in the book.
type ArrayOptions struct {
	// InFlight is how many offers are in negotiation at once;
	// DefaultInFlight if zero or less.
	InFlight int
	// Throttle, if above zero, is the most of the array's contracts (or
	// waiting offers) live at once, as Slurm's %N keeps N tasks running:
	// the next offer goes only once one of them has ended.
	Throttle int
	// Wait is how long each offer may wait in the exchange's book
	// (OfferWait); none if zero.
	Wait time.Duration
}

// ArrayOffer is one index's offer and its answer.
type ArrayOffer struct {
	Index     int
	RequestID string // ArrayRequestID of the array's id and Index
	Reply     protocol.OfferReply
	Err       error
}

// Made says whether the offer made a contract, or waits in the book for
// one: a reply with neither is the market's no (its Rejections and
// Counters say why; OfferArray takes no counter-offer).
func (o ArrayOffer) Made() bool {
	return o.Err == nil && (o.Reply.Contract != nil || o.Reply.Queued != nil)
}

// ArrayRequestID is the request id of index i of the array whose
// request id is requestID: the same array sent again, under the same
// id, escrows nothing twice.
func ArrayRequestID(requestID string, i int) string { return fmt.Sprintf("%s/%d", requestID, i) }

// OfferArray makes an offer per index, terms(i) at index i, each under
// its own request id (ArrayRequestID), at most opts.InFlight in
// negotiation at once, taking the indexes in order; it returns each
// index's answer in the indexes' order, and calls onDone (if not nil,
// from any goroutine) as each is answered.
//
// With a throttle there are opts.Throttle senders, and each holds its
// place while the contract (or waiting offer) it made is live, sending
// its next offer only once that has ended; once every index is taken
// nobody waits for anything, so OfferArray returns while the last
// contracts run. An offer the exchange refuses as rate_limited is sent
// again, under its request id, until it is taken, and from the first
// refusal on the array goes one offer at a time (pacer). The first offer
// that gets no answer (unavailable, deadline_exceeded, or ctx ended)
// stops the ones not yet sent: the exchange or NATS is away, and each
// would wait its timeout; those are answered "not offered", wrapping
// that offer's error.
func (c *Client) OfferArray(ctx context.Context, requestID string, indexes []int, terms func(i int) contract.Terms, opts ArrayOptions, onDone func(ArrayOffer)) []ArrayOffer {
	offers := make([]ArrayOffer, len(indexes))
	for n, i := range indexes {
		offers[n].Index, offers[n].RequestID = i, ArrayRequestID(requestID, i)
	}
	if len(offers) == 0 {
		return offers
	}
	if opts.InFlight <= 0 {
		opts.InFlight = DefaultInFlight
	}
	if onDone == nil {
		onDone = func(ArrayOffer) {}
	}
	senders := opts.InFlight
	if opts.Throttle > 0 {
		senders = opts.Throttle
	}
	senders = min(senders, len(offers))
	negotiating := make(chan struct{}, opts.InFlight)
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
				if n >= len(offers) {
					return
				}
				if n == len(offers)-1 {
					allTaken()
				}
				o := &offers[n]
				if err := isAway(); err != nil {
					o.Err = fmt.Errorf("not offered: %w", err)
					onDone(*o)
					continue
				}
				negotiating <- struct{}{}
				o.Reply, o.Err = pace.offer(ctx, c, o.RequestID, terms(o.Index), opts.Wait)
				<-negotiating
				if o.Err != nil && (ctx.Err() != nil || unanswered(o.Err)) {
					awayMu.Lock()
					if away == nil {
						away = o.Err
					}
					awayMu.Unlock()
				}
				onDone(*o)
				if opts.Throttle > 0 && o.Made() {
					var id string
					if o.Reply.Contract != nil {
						id = o.Reply.Contract.ID
					} else {
						id = o.Reply.Queued.ID // a waiting offer's id is its contract's
					}
					c.awaitEnd(taken, id)
				}
			}
		})
	}
	wg.Wait()
	return offers
}

// unanswered says whether err leaves it unknown whether the offer went
// through: the exchange or NATS did not answer in time.
func unanswered(err error) bool {
	var be *bourse.Error
	if !errors.As(err, &be) {
		return false
	}
	switch be.Code {
	case bourse.EUnavailable, bourse.EDeadlineExceeded, bourse.ERateLimited:
		return true
	}
	return false
}

// awaitEnd returns once contract id has ended (settled or voided), or
// waiting offer id has left the book without becoming one, or ctx ends.
// Watch brings the contract's end as it happens; a waiting offer has no
// events of its own until it is matched, so it is looked for in the book
// every WatchPoll. Errors (the exchange away a moment) are waited out:
// letting the next offer go early would break the throttle.
func (c *Client) awaitEnd(ctx context.Context, id string) {
	for ctx.Err() == nil {
		if c.ended(ctx, id) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(WatchPoll): //wallclock: pacing: a look at the book in real time
		}
	}
}

// ended watches contract id until it ends (true) or the watch does;
// it is true too for a waiting offer that left the book with no contract.
func (c *Client) ended(ctx context.Context, id string) bool {
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
	ws, err := c.Waiting(ctx, "")
	if err != nil {
		return false
	}
	for _, w := range ws {
		if w.ID == id {
			return false
		}
	}
	// Not a contract, not in the book: it left the book, unless it was
	// matched between the two readings.
	_, err = c.Contract(ctx, id)
	return bourse.ErrorCode(err) == bourse.ENotFound
}
