package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// batchLinger is how long a final reading waits for others to go with it
// in one readings message: jobs that end within it share their final
// readings' message.
const batchLinger = 20 * time.Millisecond

// send queues a reading for the server's next readings message (after
// keeping it in the outbox): the usage stream then carries a message per
// interval per server, not per contract. A server's contracts started at
// different moments fall due at different ticks of an interval, so a
// reading that is not final waits up to a reading interval for the
// others; a final one goes out after batchLinger, with whatever waits.
//
// An exchange that does not say its stream takes readings messages (one
// older than them: HelloReply.Readings) gets each reading on its own, as
// before.
func (a *Agent) send(rd contract.Reading) {
	a.keep(rd)
	if rd.Final {
		a.held.add(rd, time.Now(), a.receiptWait()) //wallclock: pacing: when to ask about it, in real time
	}
	if !a.batching() {
		a.work.Add(1)
		go func() {
			defer a.work.Done()
			a.publishAlone(rd)
		}()
		return
	}
	wait := a.node.ReadingEvery()
	if rd.Final {
		wait = batchLinger
	}
	a.batchMu.Lock()
	defer a.batchMu.Unlock()
	a.batch = append(a.batch, rd)
	a.flushIn(wait)
}

// flushIn has the queued readings flushed within wait: it arms a flush,
// or brings an armed one forward. a.batchMu is held.
func (a *Agent) flushIn(wait time.Duration) {
	due := time.Now().Add(wait) //wallclock: pacing: how long readings gather, in real time
	if a.batchTimer != nil {
		if !a.batchDue.After(due) {
			return
		}
		if !a.batchTimer.Stop() {
			return // firing: its flush takes what is queued
		}
		a.work.Done()
	}
	a.batchDue = due
	a.work.Add(1)
	a.batchTimer = time.AfterFunc(wait, func() { //wallclock: pacing: how long readings gather, in real time
		defer a.work.Done()
		a.flush()
	})
}

// flushSoon flushes what is queued now, as a shutdown must before it
// waits for the agent's work.
func (a *Agent) flushSoon() {
	a.batchMu.Lock()
	defer a.batchMu.Unlock()
	if len(a.batch) > 0 {
		a.flushIn(0)
	}
}

// flush publishes the readings queued, as few messages as fit them.
func (a *Agent) flush() {
	a.batchMu.Lock()
	rds := a.batch
	a.batch, a.batchTimer = nil, nil
	a.batchMu.Unlock()
	a.pack(rds, a.publishReadings)
}

// pack encodes and signs rds into as few readings messages as fit them,
// in order, and hands each to emit with the readings it carries. A
// reading that cannot be encoded or signed is logged and left out.
func (a *Agent) pack(rds []contract.Reading, emit func(rds []contract.Reading, data []byte)) {
	var bodies [][]byte
	var sigs []string
	var group []contract.Reading
	size := 0
	for _, rd := range rds {
		body, err := protocol.Marshal(rd)
		var sig string
		if err == nil && a.cfg.Signer != nil {
			sig, err = a.cfg.Signer.Sign(body)
		}
		if err != nil {
			a.log.Error("reading not encoded or signed", "contract", rd.Contract, "err", err)
			continue
		}
		if n := len(body) + len(sig) + protocol.ReadingsOverhead; size+n > protocol.MaxReadings-64 && len(group) > 0 {
			emit(group, protocol.AppendReadings(nil, bodies, sigs))
			bodies, sigs, group, size = nil, nil, nil, 0
		}
		bodies, sigs, group = append(bodies, body), append(sigs, sig), append(group, rd)
		size += len(body) + len(sig) + protocol.ReadingsOverhead
	}
	if len(group) > 0 {
		emit(group, protocol.AppendReadings(nil, bodies, sigs))
	}
}

// publishReadings puts one readings message on the usage stream, retrying
// with the same message id: while a final reading is in it, until
// JetStream has it or the agent's run ends, as a final reading on its own
// is; else for a reading interval, after which the next readings carry
// what these said. An exchange older than readings messages has a stream
// that does not take them: then each reading goes on its own, as before.
func (a *Agent) publishReadings(rds []contract.Reading, data []byte) {
	ctx, final := a.runCtx, false
	for _, rd := range rds {
		final = final || rd.Final
	}
	if !final {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(a.runCtx, a.node.ReadingEvery())
		defer cancel()
	}
	err := a.retry(ctx, "readings of "+strconv.Itoa(len(rds))+" contracts", final, func(ctx context.Context) error {
		if final && !a.held.anyFinal(rds) {
			return errReceipted // the exchange has the finals already, by another way
		}
		msg := nats.NewMsg(protocol.ReadingsSubject(a.id))
		msg.Data = data
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := a.js.PublishMsg(pctx, msg, jetstream.WithMsgID(protocol.ReadingsMsgID(a.id, data)), jetstream.WithExpectStream(protocol.UsageStream))
		if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
			return errOldStream
		}
		return err
	})
	switch {
	case errors.Is(err, errReceipted):
	case err == nil:
		for _, rd := range rds {
			a.sent(rd)
			if rd.Final {
				a.log.Info("final reading sent", "contract", rd.Contract, "reason", rd.Reason, "u", rd.U, "t", time.Duration(rd.T))
			}
		}
	case errors.Is(err, errOldStream):
		a.noResponders.Store(time.Now().UnixNano()) //wallclock: pacing: how long readings go alone
		for _, rd := range rds {
			a.publishAlone(rd)
		}
	case a.runCtx.Err() != nil:
	default:
		a.direct(rds, err)
	}
}

// direct holds readings the usage stream would not take (its node cut
// off from the stream's quorum, its leader being elected, the stream
// full) for the exchange itself, where it gives receipts: the agent's
// questions for receipts carry them to whichever exchange instance
// answers, which stores them as it would from the stream
// (receipts.go). A contract's readings so reach the exchange's store
// while the stream does not take them, and its silence is not taken for
// a lost server's. The outbox, where there is one, keeps them too and
// sends them to the stream once it takes them again.
func (a *Agent) direct(rds []contract.Reading, err error) {
	if a.receipts.Load() == receiptsGiven {
		now := time.Now() //wallclock: pacing: ask at once
		for _, rd := range rds {
			a.held.add(rd, now, 0)
		}
		a.log.Warn("readings not acknowledged by the usage stream; sending them to the exchange directly", "readings", len(rds), "err", err)
		if a.outbox != nil {
			a.kickResend()
		}
		return
	}
	final := slices.ContainsFunc(rds, func(rd contract.Reading) bool { return rd.Final })
	switch {
	case a.outbox != nil:
		a.log.Warn("readings not acknowledged; the outbox keeps them", "readings", len(rds), "final", final, "err", err)
		a.kickResend()
	case final:
		a.log.Error("final readings lost", "readings", len(rds), "err", err)
	default:
		a.log.Warn("readings skipped", "readings", len(rds), "err", err)
	}
}

// publishAlone publishes one reading on its own: a final one until
// JetStream has it or the run ends, another for a reading interval, after
// which the next reading carries its usage.
func (a *Agent) publishAlone(rd contract.Reading) {
	if rd.Final {
		a.publishFinal(rd)
		return
	}
	ctx, cancel := context.WithTimeout(a.runCtx, a.node.ReadingEvery())
	defer cancel()
	err := a.publish(ctx, rd)
	switch {
	case err == nil:
		a.sent(rd)
	case a.runCtx.Err() != nil:
	default:
		a.direct([]contract.Reading{rd}, err)
	}
}

// aloneAfterNoResponders is how long readings go alone after a readings
// message found no stream to take it.
const aloneAfterNoResponders = time.Minute

// batching says whether readings go in readings messages: the exchange's
// hello reply said its stream takes them, and none has found nothing to
// take it for aloneAfterNoResponders. Nothing answers a publish both where
// the stream is older than readings messages (an exchange rolled back)
// and while a NATS cluster elects the stream's leader (seconds): the
// readings then go alone, as they would to an old stream, and after a
// while in readings messages again, rather than alone until the next
// hello (which only a reconnection brings).
func (a *Agent) batching() bool {
	if !a.readingsMsgs.Load() {
		return false
	}
	at := a.noResponders.Load()
	return at == 0 || time.Since(time.Unix(0, at)) >= aloneAfterNoResponders //wallclock: pacing: how long readings go alone
}

// errOldStream says that nothing took a readings message: the usage
// stream is older than them, or has no leader now.
var errOldStream = errors.New("the usage stream takes no readings messages")

// errReceipted ends the retries of final readings the exchange has
// given receipts for meanwhile: they reached it without the stream.
var errReceipted = errors.New("the exchange has the final readings already")

// retry calls try until it succeeds, ctx ends, or it says the stream is
// old or the exchange has the readings, waiting longer after each failure.
func (a *Agent) retry(ctx context.Context, what string, loud bool, try func(context.Context) error) error {
	wait := 50 * time.Millisecond
	for {
		err := try(ctx)
		if err == nil || errors.Is(err, errOldStream) || errors.Is(err, errReceipted) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("publish %s: %w", what, err)
		case <-time.After(wait): //wallclock: pacing: a retry's back-off
		}
		if loud {
			a.log.Warn("final readings not acknowledged; retrying", "what", what, "err", err)
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// publish puts a reading on the usage stream, retrying with the same
// message id until JetStream acknowledges it or ctx ends. The id makes a
// retry after a lost acknowledgement harmless: the stream drops the copy.
func (a *Agent) publish(ctx context.Context, rd contract.Reading) error {
	wait := 50 * time.Millisecond
	for {
		if rd.Final && !a.held.anyFinal([]contract.Reading{rd}) && a.receipts.Load() == receiptsGiven {
			return nil // the exchange has it already, by another way
		}
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

// sent tells the outbox that JetStream has a reading. A final reading
// stays held, and in the outbox, until the exchange's receipt says its
// store has it (receipts.go), unless the exchange gives none (one older
// than them has only the stream's word to give).
func (a *Agent) sent(rd contract.Reading) {
	if rd.Final && a.receipts.Load() != receiptsNone {
		a.held.add(rd, time.Now(), a.receiptWait()) //wallclock: pacing: when to ask about it, in real time
		a.held.published(rd)
		return
	}
	// The stream has it: a reading held for the exchange directly, up to
	// this one, is done with (a held final reading, later, stays).
	a.held.done(rd.Contract, rd.Seq)
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
	t := time.NewTimer(0) //wallclock: pacing: wakes the resend loop
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.resendKick:
		case <-t.C:
		}
		if a.outbox != nil {
			a.sendOutbox(ctx)
		}
		t.Reset(a.heartbeatEvery())
	}
}

// sendOutbox publishes what the outbox holds, oldest first, until the
// first failure. A final reading the stream has already is left to the
// exchange's receipt: the outbox keeps it until then, and the question
// for its receipt carries it again if the exchange lacks it.
func (a *Agent) sendOutbox(ctx context.Context) {
	for _, rd := range a.outbox.Pending() {
		if rd.Final && a.held.isPublished(rd) {
			continue
		}
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
