// Package sim runs the market offline: the exchange's House, GPU server
// nodes and bidding strategies, the same code as production, in one
// goroutine on a virtual clock. No NATS, no sleeping, no wall clock: the
// same scenario and seed give the same contracts, byte for byte.
package sim

import (
	"container/heap"
	"context"
	"time"
)

// Engine is a discrete-event simulation: a virtual clock and one queue of
// events, each run at its time, in the order they were scheduled where
// times tie. It is not safe for concurrent use; nothing in a simulation
// needs it to be.
type Engine struct {
	now     time.Time
	queue   events
	seq     uint64
	ran     uint64
	halted  bool
	onAlarm func(key int)
	rang    event  // the last alarm run, to run one (time, key) once
	rangAt  uint64 // e.seq when it ran: alarms set after it run again
}

// NewEngine returns an engine whose clock reads start.
func NewEngine(start time.Time) *Engine { return &Engine{now: start} }

// Now is the virtual time: the time of the event running.
func (e *Engine) Now() time.Time { return e.now }

// At schedules f at t; a time in the past runs it next, at now.
func (e *Engine) At(t time.Time, f func()) {
	if t.Before(e.now) {
		t = e.now
	}
	e.seq++
	heap.Push(&e.queue, event{at: t, seq: e.seq, run: f})
}

// OnAlarm sets what an alarm runs: f with the alarm's key.
func (e *Engine) OnAlarm(f func(key int)) { e.onAlarm = f }

// Alarm schedules the alarm of key (0 or more) at t; a time in the past
// runs it next, at now. Alarms are what a simulation's servers are woken
// by: at one time they run before the other events, in order of key,
// and an alarm set twice for one time before it ran runs once. Their
// order depends on nothing but their times and keys, so a server woken
// for two reasons, or woken when it has nothing to do, runs as if woken
// once, when it must.
func (e *Engine) Alarm(t time.Time, key int) {
	if t.Before(e.now) {
		t = e.now
	}
	e.seq++
	heap.Push(&e.queue, event{at: t, seq: e.seq, key: key, alarm: true})
}

// After schedules f d from now.
func (e *Engine) After(d time.Duration, f func()) { e.At(e.now.Add(d), f) }

// Every runs f every d from now on, until f returns false.
func (e *Engine) Every(d time.Duration, f func() bool) {
	var tick func()
	tick = func() {
		if f() {
			e.After(d, tick)
		}
	}
	e.After(d, tick)
}

// Run runs the events due by until, in order, and leaves the clock at
// until; Halt stops it early, the clock at the time of the event that
// called it.
func (e *Engine) Run(until time.Time) { _ = e.RunContext(context.Background(), until) }

// checkEvery is how many events run between looks at the context: a
// look costs next to nothing, and a thousand events take well under a
// second.
const checkEvery = 1024

// RunContext is Run that also stops, after the event running, once ctx
// is done, and then returns ctx's error with the clock where it stopped.
// ctx decides only whether the run goes on, never what happens in it: a
// run it does not stop is the same as Run's.
func (e *Engine) RunContext(ctx context.Context, until time.Time) error {
	e.halted = false
	for n := 0; len(e.queue) > 0 && !e.halted; n++ {
		if n%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		next := e.queue[0]
		if next.at.After(until) {
			break
		}
		heap.Pop(&e.queue)
		e.now = next.at
		if next.alarm {
			if e.rang.alarm && next.at.Equal(e.rang.at) && next.key == e.rang.key && next.seq <= e.rangAt {
				continue // the same alarm, set again before it ran
			}
			e.rang, e.rangAt = next, e.seq
			e.ran++
			e.onAlarm(next.key)
			continue
		}
		e.ran++
		next.run()
	}
	if !e.halted && e.now.Before(until) {
		e.now = until
	}
	return nil
}

// Halt stops Run after the event running.
func (e *Engine) Halt() { e.halted = true }

// Events is how many events have run.
func (e *Engine) Events() uint64 { return e.ran }

type event struct {
	at    time.Time
	seq   uint64 // the order of scheduling
	run   func()
	alarm bool
	key   int // an alarm's
}

// events is a min-heap by time, then alarms by key, then the order of
// scheduling.
type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	if q[i].alarm != q[j].alarm {
		return q[i].alarm
	}
	if q[i].alarm && q[i].key != q[j].key {
		return q[i].key < q[j].key
	}
	return q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	n := len(old)
	x := old[n-1]
	old[n-1] = event{}
	*q = old[:n-1]
	return x
}
