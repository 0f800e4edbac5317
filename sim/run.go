package sim

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/bourse/bourse/sim/metrics"
	"github.com/bourse/bourse/sim/workload"
)

// ErrInterrupted is why a run stopped before its end: its context was
// done (bourse sim on SIGINT or SIGTERM). The Result that comes with it
// is the run as far as it went, marked Interrupted.
var ErrInterrupted = errors.New("sim: interrupted")

// Run trades the workload: each job is submitted at its arrival, the
// market runs until every job has ended or given up (or Limit), and the
// result sums it up. Once stop is done the run ends within a thousand
// events, with the result so far and ErrInterrupted.
func (m *Simulation) Run(stop context.Context) (metrics.Result, error) {
	hc := m.house.Config()
	ctx := context.Background() // the House's calls: a run never abandons one halfway
	m.e.OnAlarm(m.alarm)
	if m.cfg.Poll {
		// One event a reading interval per server: its readings, stops
		// and heartbeat, as its agent's tick loop would.
		for _, id := range m.ids {
			m.e.Every(hc.ReadingEvery, func() bool {
				m.tick(id)
				m.heartbeat(id)
				return true
			})
		}
	}
	m.e.Every(hc.SweepEvery, func() bool {
		m.house.Sweep(ctx)
		m.matchBook()
		m.wake(1) // prices and budgets move without a contract ending
		if m.done() {
			m.e.Halt()
		}
		return true
	})
	if f := m.cfg.Forget; f > 0 {
		m.e.Every(f/2, func() bool {
			before := m.e.Now().Add(-f)
			m.store.Forget(before)
			m.ledger.Compact(before)
			return true
		})
	}
	m.e.At(m.m.Due(), m.sample)
	m.pull()
	if err := m.e.RunContext(stop, m.cfg.Start.Add(m.cfg.Limit)); err != nil {
		m.finish()
		r := m.m.Result(m.e.Now())
		r.Summary.Offers = m.offers
		r.Scenario, r.Policy, r.Seed, r.Interrupted = m.cfg.Scenario, m.cfg.Policy, m.cfg.Seed, true
		return r, fmt.Errorf("%w after %v of virtual time: %w", ErrInterrupted, m.e.Now().Sub(m.cfg.Start), err)
	}
	if m.srcErr != nil {
		return metrics.Result{}, fmt.Errorf("sim: workload: %w", m.srcErr)
	}
	if m.broke != nil {
		return metrics.Result{}, m.broke
	}
	end := m.e.Now()
	if m.done() && !m.lastEnd.IsZero() {
		// The sweep that saw the market done came up to a sweep interval
		// after the last job ended: the run's length, over which
		// utilisation is averaged, ends with that job.
		end = m.lastEnd
	}
	m.finish()
	r := m.m.Result(end)
	if s := r.Summary; s.Jobs > 0 && s.NoMatch == s.Jobs {
		return metrics.Result{}, &NoMatchError{Jobs: s.Jobs, First: m.noMatch}
	}
	r.Summary.Offers = m.offers
	r.Scenario, r.Policy, r.Seed = m.cfg.Scenario, m.cfg.Policy, m.cfg.Seed
	if t, ok := m.cfg.Workload.(interface{ Rows() workload.Rows }); ok {
		rows := t.Rows()
		r.Trace = &rows
	}
	return r, nil
}

// pull reads the workload's next job and schedules its arrival.
func (m *Simulation) pull() {
	j, err := m.cfg.Workload.Next()
	switch {
	case errors.Is(err, io.EOF):
		m.eof = true
		return
	case err != nil:
		m.srcErr = err
		m.eof = true
		m.e.Halt()
		return
	}
	if m.cfg.Horizon > 0 && j.Arrival > m.cfg.Horizon {
		m.eof = true
		return
	}
	m.next = &j
	m.e.At(m.cfg.Start.Add(j.Arrival), m.arrive)
}

// sample records the series at its interval.
func (m *Simulation) sample() {
	m.m.Sample(m.open, m.waiting.len()+m.busy+len(m.standing))
	m.e.At(m.m.Due(), m.sample)
}

// done reports that the market has nothing left to do.
func (m *Simulation) done() bool {
	return m.eof && m.busy == 0 && m.open == 0 && m.waiting.len() == 0 && len(m.standing) == 0
}

// finish counts the jobs the run's limit cut off, waiting, negotiating
// or running, as not completed. Jobs that had not arrived by then are not
// counted at all.
func (m *Simulation) finish() {
	for j := range m.live {
		m.m.Reject(j.w.Deadline > 0)
	}
	clear(m.live)
}

// tick carries out what a node says is due, as the agent would: readings
// to the House, jobs stopped (their finals to the House), booked jobs
// launched and their starts reported. It reports whether a job stopped or
// started, or the policy changed its ask: the server's state changed.
func (m *Simulation) tick(id string) bool {
	ctx := context.Background()
	n := m.nodes[id]
	due := n.Tick(m.e.Now())
	for _, r := range due.Readings {
		_ = m.house.Count(ctx, id, r)
	}
	m.stop(id, due.Stops)
	for _, c := range due.Launch {
		if st, err := n.Launch(ctx, m.e.Now(), c); err == nil {
			_, _ = m.house.Started(ctx, id, st)
		}
	}
	return len(due.Stops) > 0 || len(due.Launch) > 0 || due.AskChanged
}

// NoMatchError is a run none of whose jobs any server could take: no
// server has the GPUs they ask for (their model, their count). Its
// results would be a market that never traded, which is a mistake in the
// scenario, not a finding.
type NoMatchError struct {
	Jobs  int
	First error // the House's answer to the first of them
}

func (e *NoMatchError) Error() string {
	return fmt.Sprintf("sim: no server fits any of the %d jobs (the first: %v): the servers have no GPUs of the models and counts the workload asks for", e.Jobs, e.First)
}

func (e *NoMatchError) Unwrap() error { return e.First }
