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
	"github.com/bourse/bourse/trade"
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
	var reason trade.Reason
	var last Measurement // the last good one, should the final measurement fail
	for reason == "" {
		select {
		case <-r.job.Done():
			reason = trade.ReasonCompleted
			if r.terms.TimeLimit > 0 && a.now().Sub(r.started.At) >= r.terms.TimeLimit {
				// A runner that enforces the limit itself stopped it.
				reason = trade.ReasonTimeLimit
			}
		case <-limit.C:
			reason = trade.ReasonTimeLimit
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
		reason = trade.ReasonShutdown
	}
	a.finish(r, seq+1, reason, last)
}

// publishUntil publishes a reading that is not final, giving up after
// every or when the run is halted: the next reading is cumulative and
// carries its usage, and a stop must not wait for a slow stream. An outbox
// keeps it meanwhile, for resend, until a newer reading replaces it.
func (a *Agent) publishUntil(r *run, rd trade.Reading, every time.Duration) {
	a.keep(rd)
	ctx, cancel := context.WithTimeout(r.ctx, every)
	defer cancel()
	err := a.publish(ctx, rd)
	switch {
	case err == nil:
		a.sent(rd)
	case r.ctx.Err() != nil:
	case a.outbox != nil:
		a.log.Warn("reading not acknowledged; the outbox keeps it", "contract", r.id, "seq", rd.Seq, "err", err)
		a.kickResend()
	default:
		a.log.Warn("reading skipped", "contract", r.id, "seq", rd.Seq, "err", err)
	}
}

// limitReached says why the terms end the job at this measurement, if they
// do.
func (a *Agent) limitReached(r *run, m Measurement) trade.Reason {
	if m.T >= r.terms.TimeLimit {
		return trade.ReasonTimeLimit
	}
	due, err := contract.Due(r.terms, contract.Usage{U: m.U, T: m.T, S: m.S}, a.cfg.Currency.Scale)
	if err != nil {
		a.log.Error("price a reading", "contract", r.id, "err", err)
		return ""
	}
	if due.GreaterThanOrEqual(r.terms.Prepayment) {
		return trade.ReasonExhausted
	}
	return ""
}

// finish stops the job, frees its GPUs and publishes the final reading,
// retrying until JetStream has it or the agent gives up at shutdown; an
// outbox then keeps it for the agent's next run.
func (a *Agent) finish(r *run, seq uint64, reason trade.Reason, last Measurement) {
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
	if a.cfg.OnFinal != nil {
		a.cfg.OnFinal(rd)
	}
	a.keep(rd)
	switch err := a.publish(a.runCtx, rd); {
	case err == nil:
		a.sent(rd)
		a.log.Info("stopped", "contract", r.id, "reason", reason, "u", rd.U, "t", time.Duration(rd.T))
	case a.outbox != nil:
		a.log.Warn("final reading not acknowledged; the outbox keeps it for the next run", "contract", r.id, "seq", seq, "reason", reason, "err", err)
	default:
		a.log.Error("final reading lost", "contract", r.id, "seq", seq, "reason", reason, "u", rd.U, "t", rd.T, "err", err)
	}
	a.mu.Lock()
	r.published = true
	a.mu.Unlock()
}

func (a *Agent) reading(r *run, seq uint64, m Measurement) trade.Reading {
	return trade.Reading{Contract: r.id, Seq: seq, U: m.U, T: trade.Duration(m.T), S: m.S, EnergyJ: m.EnergyJ, At: a.now()}
}

// publish puts a reading on the usage stream, retrying with the same
// message id until JetStream acknowledges it or ctx ends. The id makes a
// retry after a lost acknowledgement harmless: the stream drops the copy.
func (a *Agent) publish(ctx context.Context, rd trade.Reading) error {
	wait := 50 * time.Millisecond
	for {
		err := a.publishOnce(ctx, rd)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish reading %s: %w", protocol.MsgID(a.id, rd), err)
		case <-time.After(wait):
		}
		if rd.Final {
			a.log.Warn("final reading not acknowledged; retrying", "contract", rd.Contract, "err", err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// publishOnce tries once to put a reading on the usage stream, under its
// message id (protocol.Reading.MsgID: no other server can work it out, so
// none can spend it first).
func (a *Agent) publishOnce(ctx context.Context, rd trade.Reading) error {
	data, err := json.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode reading: %w", err)
	}
	msg := nats.NewMsg(protocol.UsageSubject(a.id, rd.Contract))
	msg.Data = data
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = a.js.PublishMsg(ctx, msg, jetstream.WithMsgID(protocol.MsgID(a.id, rd)), jetstream.WithExpectStream(protocol.UsageStream))
	return err
}

// keep writes a reading to the outbox, if there is one, before it is
// published.
func (a *Agent) keep(rd trade.Reading) {
	if a.outbox == nil {
		return
	}
	if err := a.outbox.Append(rd); err != nil {
		a.log.Error("outbox: the reading is kept in memory only", "contract", rd.Contract, "seq", rd.Seq, "final", rd.Final, "err", err)
	}
}

// sent tells the outbox that JetStream has a reading.
func (a *Agent) sent(rd trade.Reading) {
	if a.outbox == nil {
		return
	}
	if err := a.outbox.Done(rd.Contract, rd.Seq); err != nil {
		a.log.Warn("outbox", "err", err)
	}
}

func (a *Agent) kickResend() {
	select {
	case a.resendKick <- struct{}{}:
	default: // a pass is due already
	}
}

// resend publishes what the outbox holds, oldest first, until ctx ends: at
// once (what the agent's last run left), after a reconnect, when a reading
// was not acknowledged, and every heartbeat while readings wait. A pass
// stops at the first failure; the next tries again. Readings a job's
// watch is publishing too may go twice: the message id makes that
// harmless.
func (a *Agent) resend(ctx context.Context) {
	if a.outbox == nil {
		return
	}
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.resendKick:
		case <-t.C:
		}
		for _, rd := range a.outbox.Pending() {
			if err := a.publishOnce(ctx, rd); err != nil {
				if ctx.Err() == nil {
					a.log.Debug("outbox: not sent; trying again later", "contract", rd.Contract, "seq", rd.Seq, "err", err)
				}
				break
			}
			a.sent(rd)
			if rd.Final {
				a.log.Info("final reading sent from the outbox", "contract", rd.Contract, "seq", rd.Seq, "reason", rd.Reason)
			}
		}
		t.Reset(a.heartbeatEvery())
	}
}
