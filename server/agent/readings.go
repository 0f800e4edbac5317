package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// publishUntil publishes a reading that is not final, giving up after
// every or when the run ends: the next reading is cumulative and carries
// its usage, and a stop must not wait for a slow stream. An outbox keeps it
// meanwhile, for resend, until a newer reading replaces it.
func (a *Agent) publishUntil(rd contract.Reading, every time.Duration) {
	a.keep(rd)
	ctx, cancel := context.WithTimeout(a.runCtx, every)
	defer cancel()
	err := a.publish(ctx, rd)
	switch {
	case err == nil:
		a.sent(rd)
	case a.runCtx.Err() != nil:
	case a.outbox != nil:
		a.log.Warn("reading not acknowledged; the outbox keeps it", "contract", rd.Contract, "seq", rd.Seq, "err", err)
		a.kickResend()
	default:
		a.log.Warn("reading skipped", "contract", rd.Contract, "seq", rd.Seq, "err", err)
	}
}

// publish puts a reading on the usage stream, retrying with the same
// message id until JetStream acknowledges it or ctx ends. The id makes a
// retry after a lost acknowledgement harmless: the stream drops the copy.
func (a *Agent) publish(ctx context.Context, rd contract.Reading) error {
	wait := 50 * time.Millisecond
	for {
		err := a.publishOnce(ctx, rd)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish reading %s: %w", protocol.MsgID(a.id, rd), err)
		case <-time.After(wait): //wallclock: pacing: a retry's back-off
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
func (a *Agent) publishOnce(ctx context.Context, rd contract.Reading) error {
	data, err := protocol.Marshal(rd)
	if err != nil {
		return fmt.Errorf("encode reading: %w", err)
	}
	msg := nats.NewMsg(protocol.UsageSubject(a.id, rd.Contract))
	msg.Data = data
	if a.cfg.Signer != nil {
		sig, err := a.cfg.Signer.Sign(data)
		if err != nil {
			return err
		}
		msg.Header.Set(protocol.SigHeader, sig)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = a.js.PublishMsg(ctx, msg, jetstream.WithMsgID(protocol.MsgID(a.id, rd)), jetstream.WithExpectStream(protocol.UsageStream))
	return err
}

// keep writes a reading to the outbox, if there is one, before it is
// published.
func (a *Agent) keep(rd contract.Reading) {
	if a.outbox == nil {
		return
	}
	if err := a.outbox.Append(rd); err != nil {
		a.log.Error("outbox: the reading is kept in memory only", "contract", rd.Contract, "seq", rd.Seq, "final", rd.Final, "err", err)
	}
}

// sent tells the outbox that JetStream has a reading, and keeps a final
// one a while to send again after a reconnect (finalsAgain).
func (a *Agent) sent(rd contract.Reading) {
	if rd.Final {
		a.again.sent(rd, a.now())
	}
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
// harmless. Each pass first sends again the final readings a reconnect
// made due (finalsAgain), with or without an outbox.
func (a *Agent) resend(ctx context.Context) {
	t := time.NewTimer(0) //wallclock: pacing: wakes the resend loop
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.resendKick:
		case <-t.C:
		}
		if a.sendAgain(ctx) && a.outbox != nil {
			a.sendOutbox(ctx)
		}
		t.Reset(a.heartbeatEvery())
	}
}

// sendAgain publishes the final readings due to be sent again, and
// reports whether it sent them all.
func (a *Agent) sendAgain(ctx context.Context) bool {
	for rd, ok := a.again.next(); ok; rd, ok = a.again.next() {
		if err := a.publishOnce(ctx, rd); err != nil {
			if ctx.Err() == nil {
				a.log.Debug("final reading not sent again yet; trying again later", "contract", rd.Contract, "seq", rd.Seq, "err", err)
			}
			return false
		}
		a.again.done(rd)
		a.log.Info("final reading sent again after a reconnect", "contract", rd.Contract, "seq", rd.Seq, "reason", rd.Reason)
	}
	return true
}

// sendOutbox publishes what the outbox holds, oldest first, until the
// first failure.
func (a *Agent) sendOutbox(ctx context.Context) {
	for _, rd := range a.outbox.Pending() {
		if err := a.publishOnce(ctx, rd); err != nil {
			if ctx.Err() == nil {
				a.log.Debug("outbox: not sent; trying again later", "contract", rd.Contract, "seq", rd.Seq, "err", err)
			}
			return
		}
		a.sent(rd)
		if rd.Final {
			a.log.Info("final reading sent from the outbox", "contract", rd.Contract, "seq", rd.Seq, "reason", rd.Reason)
		}
	}
}
