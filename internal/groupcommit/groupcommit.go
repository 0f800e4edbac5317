// Package groupcommit runs concurrent calls in groups: one committer
// goroutine takes every call waiting for it and hands them, in the order
// they arrived, to a commit function that serves them together, typically
// in one database transaction. The busier the callers, the bigger the
// groups: calls queue while a group commits, and the next group takes them
// all. The SQL ledger groups its Apply calls so, and the exchange's SQL
// store its Open and Update calls.
//
// How long to wait for a group to fill: the committer knows how many
// callers are inside Do. Having taken what is queued, it waits while some
// of them have yet to queue their call (typically, callers that the last
// group has just answered and that are coming back with their next call),
// but no longer than the window. It waits by yielding the processor, not
// with a timer: Go's timers below a millisecond sleep a whole millisecond
// when nothing else runs, which is longer than most transactions take.
package groupcommit

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is the error of a call made to, or left in, a closed Loop.
var ErrClosed = errors.New("groupcommit: closed")

// Call is one caller's request in a group. The commit function answers it
// with Finish.
type Call[T any] struct {
	Ctx context.Context
	Req T
	// Err is the call's error, set by the commit function or the loop.
	Err  error
	done chan struct{}
}

// Finish answers the call: its caller returns with c.Err.
func (c *Call[T]) Finish(err error) {
	c.Err = err
	close(c.done)
}

// Loop is a committer and its queue. It is safe for concurrent use.
type Loop[T any] struct {
	window time.Duration
	size   int
	weight func(T) int
	commit func(group []*Call[T])

	calls    chan *Call[T]
	inflight atomic.Int64  // callers inside Do
	stop     chan struct{} // closed by Close
	exited   chan struct{} // closed when run has returned
	once     sync.Once
}

// Start starts a loop whose groups wait up to window for the callers
// they expect, and weigh at most size (a call weighs weight(req), or 1 if
// weight is nil; a call heavier than size makes a group alone). commit
// serves a group and must Finish every call of it; it runs on the
// committer goroutine, one group at a time.
func Start[T any](window time.Duration, size int, weight func(T) int, commit func(group []*Call[T])) *Loop[T] {
	if weight == nil {
		weight = func(T) int { return 1 }
	}
	l := &Loop[T]{window: window, size: size, weight: weight, commit: commit,
		calls: make(chan *Call[T], 4*size), stop: make(chan struct{}), exited: make(chan struct{})}
	go l.run()
	return l
}

// Close stops the loop once the group in hand is committed; calls still
// queued fail with ErrClosed.
func (l *Loop[T]) Close() {
	l.once.Do(func() { close(l.stop) })
	<-l.exited
}

// Do queues req and waits for its group's answer. If ctx ends first, Do
// returns ctx's error, and req may still be served: a caller retries with
// the same idempotency keys.
func (l *Loop[T]) Do(ctx context.Context, req T) (*Call[T], error) {
	l.inflight.Add(1)
	defer l.inflight.Add(-1)
	c := &Call[T]{Ctx: ctx, Req: req, done: make(chan struct{})}
	select {
	case l.calls <- c:
	case <-l.stop:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case <-c.done:
		return c, c.Err
	case <-l.exited:
		// Answered before the committer stopped, or queued too late.
		select {
		case <-c.done:
			return c, c.Err
		default:
			return nil, ErrClosed
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (l *Loop[T]) run() {
	defer close(l.exited)
	for {
		var first *Call[T]
		select {
		case first = <-l.calls:
		case <-l.stop:
			l.drain()
			return
		}
		group, n := []*Call[T]{first}, l.weight(first.Req)
		deadline := time.Now().Add(l.window)
		for n < l.size {
			select {
			case c := <-l.calls:
				group = append(group, c)
				n += l.weight(c.Req)
				continue
			default:
			}
			if l.inflight.Load() <= int64(len(group)) || !time.Now().Before(deadline) {
				break
			}
			runtime.Gosched()
		}
		l.serve(group)
	}
}

// serve leaves out the calls whose caller has gone (nothing of theirs is
// served) and commits the rest.
func (l *Loop[T]) serve(group []*Call[T]) {
	live := group[:0]
	for _, c := range group {
		if err := c.Ctx.Err(); err != nil {
			c.Finish(err)
			continue
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		l.commit(live)
	}
}

// drain fails the calls still queued at close.
func (l *Loop[T]) drain() {
	for {
		select {
		case c := <-l.calls:
			c.Finish(ErrClosed)
		default:
			return
		}
	}
}
