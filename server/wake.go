package server

import (
	"time"

	"github.com/bourse/bourse/contract"
)

// Forecaster is a Job whose measurements are known ahead, as a function of
// how long it has run: the synthetic job's, whose use is a closed form of
// the clock. A node forecasts such a job's end and the moment its
// prepayment runs out when it launches it, so that a driver which ticks
// the node only when something is due (Wake) stops the job at those
// moments exactly, without measuring it in between.
type Forecaster interface {
	// Forecast is the measurement after the job has run for elapsed.
	Forecast(elapsed time.Duration) Measurement
	// Length is how long the job runs before it ends by itself; 0 for a
	// job that runs until it is stopped.
	Length() time.Duration
}

// forecast sets when a run just launched will end by itself and when its
// prepayment will run out, for a job that forecasts; zero times where it
// will not, or cannot say. n.mu is held.
func (n *Node) forecast(r *run) {
	f, ok := r.job.(Forecaster)
	if !ok {
		return
	}
	horizon := r.terms.TimeLimit
	if l := f.Length(); l > 0 {
		r.ends = r.started.At.Add(l)
		horizon = min(horizon, l)
	}
	// The running charge only grows with time (contract.Due is
	// non-decreasing in U, T and S): if it is short of the prepayment at
	// the horizon it is short before, and otherwise the first nanosecond
	// it reaches it is found by bisection. Most jobs end well within
	// their prepayment, and cost one pricing here.
	exhausted := func(t time.Duration) bool {
		m := f.Forecast(t)
		due, err := contract.Due(r.terms, contract.Usage{U: m.U, T: m.T, S: m.S}, n.cfg.Currency.Scale)
		return err == nil && due.GreaterThanOrEqual(r.terms.Prepayment)
	}
	if horizon <= 0 || !exhausted(horizon) {
		return
	}
	lo, hi := time.Duration(0), horizon // exhausted(hi), and not at lo unless lo is 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if exhausted(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	r.exhausts = r.started.At.Add(hi)
}

// Wake is when the node next has something to do by itself: a job ends,
// a time limit passes, a forecast prepayment runs out, a booked slot
// begins, a run a client or the exchange halted waits to be stopped, a
// learning policy wants the time (Observer.Next).
// Readings are not counted: a driver that wants them every ReadingEvery
// ticks the node for them. Zero: nothing, until something comes from
// outside (an offer, a start, a control). A time already past means
// now. A driver that ticks the node at Wake, and again after each thing
// it tells the node, misses nothing the node would do on a tick.
func (n *Node) Wake() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	var at time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	for _, r := range n.active {
		if r.stopping {
			continue
		}
		if r.halting != "" {
			soonest(r.started.At) // due now: its stop is the next tick's
			continue
		}
		soonest(r.started.At.Add(r.terms.TimeLimit))
		soonest(r.ends)
		soonest(r.exhausts)
	}
	for _, b := range n.bookings {
		if b.contract != "" && !b.starting {
			soonest(b.terms.StartAt)
		}
	}
	if n.observer != nil {
		soonest(n.observer.Next())
	}
	return at
}
