package server

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// watch publishes the run's readings every ReadingEvery until the job ends
// by itself, reaches its time limit, exhausts its prepayment or is halted;
// then it stops the job, frees its GPUs and publishes the final reading.
func (a *Agent) watch(r *run) {
	defer a.jobs.Done()
	a.mu.Lock()
	every := a.readingEvery
	a.mu.Unlock()
	tick := time.NewTicker(every)
	defer tick.Stop()
	limit := time.NewTimer(r.terms.TimeLimit - a.now().Sub(r.started.At))
	defer limit.Stop()

	var seq uint64
	var reason protocol.Reason
	var last Measurement // the last good one, should the final measurement fail
	for reason == "" {
		select {
		case <-r.job.Done():
			reason = protocol.ReasonCompleted
		case <-limit.C:
			reason = protocol.ReasonTimeLimit
		case <-r.ctx.Done():
			reason = r.reason
		case <-tick.C:
			m, err := r.job.Measure()
			if err != nil {
				a.log.Warn("measure", "contract", r.id, "err", err)
				continue
			}
			last = m
			if reason = a.limitReached(r, m); reason == "" {
				seq++
				a.publishUntil(r, a.reading(r, seq, m), every)
			}
		}
	}
	if reason == "" { // the agent's context ended without a halt
		reason = protocol.ReasonShutdown
	}
	a.finish(r, seq+1, reason, last)
}

// publishUntil publishes a reading that is not final, giving up after
// every or when the run is halted: the next reading is cumulative and
// carries its usage, and a stop must not wait for a slow stream.
func (a *Agent) publishUntil(r *run, rd protocol.Reading, every time.Duration) {
	ctx, cancel := context.WithTimeout(r.ctx, every)
	defer cancel()
	if err := a.publish(ctx, rd); err != nil && r.ctx.Err() == nil {
		a.log.Warn("reading skipped", "contract", r.id, "seq", rd.Seq, "err", err)
	}
}

// limitReached says why the terms end the job at this measurement, if they
// do.
func (a *Agent) limitReached(r *run, m Measurement) protocol.Reason {
	if m.T >= r.terms.TimeLimit {
		return protocol.ReasonTimeLimit
	}
	due, err := contract.Due(r.terms, contract.Usage{U: m.U, T: m.T, S: m.S}, a.cfg.Currency.Scale)
	if err != nil {
		a.log.Error("price a reading", "contract", r.id, "err", err)
		return ""
	}
	if due.GreaterThanOrEqual(r.terms.Prepayment) {
		return protocol.ReasonExhausted
	}
	return ""
}

// finish stops the job, frees its GPUs and publishes the final reading,
// retrying until JetStream has it or the agent gives up at shutdown.
func (a *Agent) finish(r *run, seq uint64, reason protocol.Reason, last Measurement) {
	r.halt(reason) // so that later controls find it stopped
	if err := r.job.Stop(a.runCtx, reason); err != nil {
		a.log.Warn("stop", "contract", r.id, "err", err)
	}
	m, err := r.job.Measure()
	if err != nil {
		// Settling on less than was measured is the client's gain; on
		// nothing would be the server's loss.
		a.log.Error("measure the final reading; using the last", "contract", r.id, "err", err)
		m = last
	}
	a.mu.Lock()
	for _, i := range r.started.GPUs {
		if a.owner[i] == "run "+r.id {
			delete(a.owner, i)
			a.freeValid = false
		}
	}
	r.ended, r.endedAt = true, a.now()
	delete(a.active, r.id)
	a.ended = append(a.ended, r)
	a.mu.Unlock()

	rd := a.reading(r, seq, m)
	rd.Final, rd.Reason, rd.ExitCode = true, reason, m.ExitCode
	if err := a.publish(a.runCtx, rd); err != nil {
		a.log.Error("final reading lost", "contract", r.id, "seq", seq, "reason", reason, "u", rd.U, "t", rd.T, "err", err)
	} else {
		a.log.Info("stopped", "contract", r.id, "reason", reason, "u", rd.U, "t", time.Duration(rd.T))
	}
	a.mu.Lock()
	r.published = true
	a.mu.Unlock()
}

func (a *Agent) reading(r *run, seq uint64, m Measurement) protocol.Reading {
	return protocol.Reading{Contract: r.id, Seq: seq, U: m.U, T: protocol.Duration(m.T), S: m.S, EnergyJ: m.EnergyJ, At: a.now()}
}

// publish puts a reading on the usage stream, retrying with the same
// message id until JetStream acknowledges it or ctx ends. The id makes a
// retry after a lost acknowledgement harmless: the stream drops the copy.
func (a *Agent) publish(ctx context.Context, rd protocol.Reading) error {
	data, err := json.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode reading: %w", err)
	}
	wait := 50 * time.Millisecond
	for {
		msg := nats.NewMsg(protocol.UsageSubject(a.id, rd.Contract))
		msg.Data = data
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = a.js.PublishMsg(actx, msg, jetstream.WithMsgID(rd.MsgID()), jetstream.WithExpectStream(protocol.UsageStream))
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish reading %s: %w", rd.MsgID(), err)
		case <-time.After(wait):
		}
		if rd.Final {
			a.log.Warn("final reading not acknowledged; retrying", "contract", rd.Contract, "err", err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}
