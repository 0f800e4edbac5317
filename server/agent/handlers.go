package agent

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// onOffer decides on a protocol.ServerOffer and answers a protocol.Decision.
func (a *Agent) onOffer(m *nats.Msg) {
	var so protocol.ServerOffer
	if err := decode(m, &so); err != nil {
		a.respond(m, protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)})
		return
	}
	d := a.node.Decide(a.now(), so)
	if d.Accept {
		a.changed() // GPUs claimed
	}
	a.log.Debug("offer", "offer", so.Offer, "client", so.Terms.Client, "accept", d.Accept,
		"counters", len(d.Counters), "reason", d.Reason)
	if d.Accept && a.cfg.Signer != nil {
		a.respondSigned(m, d)
		return
	}
	a.respond(m, d)
}

// onQuote answers a quote (a protocol.ServerOffer) with the
// protocol.Decision the node would make of the offer, claiming nothing.
// Nothing binds on it, so it is not signed.
func (a *Agent) onQuote(m *nats.Msg) {
	var so protocol.ServerOffer
	if err := decode(m, &so); err != nil {
		a.respond(m, protocol.Decision{Reason: bourse.ErrorMessage(err), Code: bourse.ErrorCode(err)})
		return
	}
	a.respond(m, a.node.Quote(a.now(), so))
}

// onStart starts an accepted contract's job and answers protocol.Started,
// or an error reply: the jobs it preempts are stopped first. The start
// subscription delivers one message at a time, so two starts of one
// contract never race; one whose job names files goes on in the
// background (startWithFiles), and the node answers a second start of it
// meanwhile that it is starting.
func (a *Agent) onStart(m *nats.Msg) {
	var s protocol.Start
	if err := decode(m, &s); err != nil {
		a.respondError(m, err)
		return
	}
	if hasFiles(s) {
		a.startWithFiles(m, s)
		return
	}
	a.answerStart(m, s)
}

// answerStart starts s's contract and answers m with its Started, or
// with why not; ok says it started.
func (a *Agent) answerStart(m *nats.Msg, s protocol.Start) (started protocol.Started, ok bool) {
	started, err := a.start(a.startCtx, s)
	if err != nil {
		a.log.Warn("start", "contract", s.Contract.ID, "offer", s.Offer, "err", err)
		a.respondError(m, err)
		return started, false
	}
	a.changed()
	a.respond(m, started)
	return started, true
}

// start starts s's contract, within ctx: the stops of what it preempts,
// the fetch of its files, its launch. A job its runner prepares first
// (its image pulled: server.Preparer) is answered preparing at once.
func (a *Agent) start(ctx context.Context, s protocol.Start) (protocol.Started, error) {
	if p, ok := a.cfg.Runner.(server.Preparer); ok && p.Prepares(s.Contract.Terms.Job) {
		return a.startPrepared(s, p)
	}
	started, launching, err := a.node.Begin(ctx, a.now, s, func(stops []server.Stop) { a.stopAll(stops, preemptWait) })
	switch {
	case err != nil:
		return protocol.Started{}, err
	case !launching:
		a.saveBookings() // a booking confirmed: on disk before the exchange hears of it
		return started, nil
	}
	a.watch(s.Contract.ID)
	a.declare(&started)
	return started, nil
}

// watch ticks as soon as the contract's job ends, so that its final
// reading goes out at once and its GPUs come free for the next offer.
func (a *Agent) watch(id string) {
	done := a.node.Done(id)
	if done == nil {
		return
	}
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		select {
		case <-done:
			a.kickTick()
		case <-a.runCtx.Done():
		}
	}()
}

// preemptWait bounds how long a start waits for the jobs it preempts to
// stop.
const preemptWait = 10 * time.Second

// onCancel releases the claim of an accept the exchange did not take.
func (a *Agent) onCancel(m *nats.Msg) {
	var c protocol.Cancel
	if err := decode(m, &c); err != nil {
		a.log.Warn("cancel", "err", err)
		return
	}
	a.node.Cancel(a.now(), c.Offer)
	a.changed()
}

// onControl stops a contract's job for the client (suspended or killed)
// and answers {}; the final reading follows. Stopping a stopped contract
// answers {} again.
func (a *Agent) onControl(m *nats.Msg) {
	var c protocol.Control
	if err := decode(m, &c); err != nil {
		a.respondError(m, err)
		return
	}
	if err := a.node.Control(a.now(), c.Contract, c.Action); err != nil {
		a.respondError(m, err)
		return
	}
	a.saveBookings() // a booking cancelled
	a.kickTick()
	a.respond(m, struct{}{})
}

// stopAll stops the jobs at once and waits, at most wait, until each has
// stopped and its final reading is handed over (the publication goes on
// in the background).
func (a *Agent) stopAll(stops []server.Stop, wait time.Duration) {
	ctx, cancel := context.WithTimeout(a.runCtx, wait)
	defer cancel()
	done := make(chan struct{}, len(stops))
	for _, s := range stops {
		go func() {
			defer func() { done <- struct{}{} }()
			a.stopJob(ctx, s)
		}()
	}
	for range stops {
		<-done
	}
}
