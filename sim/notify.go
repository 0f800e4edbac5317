package sim

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// Notify is the House's Notifier: the contract log, the metrics, and what
// becomes of the contract's job. It is called in the middle of the
// House's work (a preemption settles one contract inside another's
// start), so what it sets going runs as events of its own.
func (m *Simulation) Notify(client string, ev exchange.Event) {
	m.log.write(ev)
	c := &ev.Contract
	switch ev.Type {
	case protocol.EventAccepted:
		m.open++
		m.m.Contract()
		m.acceptedReserve(c)
		j := m.offerer
		if j == nil {
			j = m.fromBook(c.ID) // matched from the book
		}
		if j != nil {
			j.contract = c.ID
			m.jobs[c.ID] = j
		}
	case protocol.EventLeftBook:
		if j := m.fromBook(ev.Waiting.ID); j != nil {
			m.reject(j) // its wait ended, or it could no longer be paid
		}
	case protocol.EventStarted:
		j := m.jobs[c.ID]
		if j == nil {
			return
		}
		now := m.e.Now()
		if j.firstRun.IsZero() {
			j.firstRun = now
		}
		m.m.Allocate(now, c.Terms.GPUs)
		m.free.take(c.Server, c.Terms.GPUs, c.Terms.Preemptible)
	case protocol.EventSettled, protocol.EventVoided:
		m.open--
		m.endedReserve(c)
		j := m.jobs[c.ID]
		delete(m.jobs, c.ID)
		if j == nil {
			return
		}
		j.contract = ""
		m.ended(j, c)
		server := c.Server
		m.e.After(0, func() {
			m.wake(c.Terms.GPUs + 1)
			if m.cfg.Standing {
				// The agent's next heartbeat tells the House of the
				// freed GPUs at once, and the book is offered them.
				_ = m.house.Heartbeat(context.Background(), server, m.nodes[server].Hello(m.e.Now()))
				m.matchBook()
			}
		})
	}
}

// ended settles the accounts of a job whose contract ended: done, or
// back to the queue for what is left of it.
func (m *Simulation) ended(j *job, c *contract.Contract) {
	now := m.e.Now()
	if !c.StartedAt.IsZero() {
		m.m.Release(now, c.Terms.GPUs)
		m.free.give(c.Server, c.Terms.GPUs, c.Terms.Preemptible)
	}
	if c.State == contract.StateSettled {
		var u decimal.Decimal
		if c.Reading != nil {
			u = c.Reading.U
			j.remaining -= time.Duration(c.Reading.T)
		}
		m.m.Settle(c.Client, u.InexactFloat64(), c.Charge.InexactFloat64(), j.c.spec.Value.Mul(u).InexactFloat64())
	}
	switch {
	case c.Reason == contract.ReasonCompleted:
		delete(m.live, j)
		m.lastEnd = now
		missed := j.w.Deadline > 0 && now.Sub(j.arrived) > j.w.Deadline
		m.m.Complete(c.Client, j.firstRun.Sub(j.arrived), now.Sub(j.arrived), j.w.Reference, missed)
	case c.Reason == contract.ReasonTimeLimit || c.Reason == contract.ReasonExhausted || c.Reason == contract.ReasonKilled:
		m.reject(j) // its terms ran out before the job did: it is not done
	default: // preempted, its server lost or shut down, never started
		if c.Reason == contract.ReasonPreempted {
			m.m.Preempt()
		}
		if j.remaining <= 0 {
			// Stopped at the very moment its work ran out, which the
			// node's alarm at a job's end, run before anything else of
			// that moment, leaves no room for: it would still have to
			// finish under a contract of its own.
			j.remaining = time.Second
		}
		m.e.After(0, func() { m.requeue(j) })
	}
}

// stop stops the jobs and hands their final readings to the House.
func (m *Simulation) stop(id string, stops []server.Stop) {
	ctx := context.Background()
	m.nodes[id].StopJobs(ctx, m.e.Now, stops, func(r contract.Reading) {
		if m.cfg.KeepFinals {
			m.finals[r.Contract] = r
		}
		_ = m.house.Count(ctx, id, r)
	})
}
