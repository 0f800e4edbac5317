package agent

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// tickEvery is how often the agent asks its node what is due: readings are
// due every ReadingEvery, but a job's end and a client's stop are carried
// out within tickEvery.
const tickEvery = 50 * time.Millisecond

// ticks asks the node what is due every tickEvery, and at once when a
// control or a stop asks, until ctx ends.
func (a *Agent) ticks(ctx context.Context) {
	t := time.NewTicker(min(tickEvery, a.node.ReadingEvery())) //wallclock: pacing: wakes the loop; what is due is read on the clock
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.tickKick:
		}
		a.tick()
	}
}

func (a *Agent) kickTick() {
	select {
	case a.tickKick <- struct{}{}:
	default: // a tick is due already
	}
}

// tick carries out what the node says is due: readings go out, jobs stop,
// booked jobs start. Slow work goes on in the background, so that one
// job's stop holds up no other's reading.
func (a *Agent) tick() {
	due := a.node.Tick(a.now())
	for _, rd := range due.Readings {
		a.send(rd)
	}
	a.saveBookings() // bookings whose slot began are runs now, or dropped
	a.learned(due.AskChanged)
	if len(due.Stops) == 0 && len(due.Launch) == 0 {
		return
	}
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		a.stopAll(due.Stops, preemptWait)
		for _, id := range due.Launch {
			a.launchBooked(id)
		}
	}()
}

// stopJob stops a job, and publishes its final reading, retrying until
// JetStream has it or the agent gives up at shutdown; an outbox then keeps
// it for the agent's next run.
func (a *Agent) stopJob(ctx context.Context, s server.Stop) {
	rd, err := a.node.StopJob(ctx, a.now, s)
	if err != nil {
		a.log.Error("stopped", "contract", s.Contract, "err", err)
		return
	}
	a.changed() // GPUs freed
	if a.cfg.OnFinal != nil {
		a.cfg.OnFinal(rd)
	}
	a.send(rd)
}

// publishFinal publishes a final reading until JetStream acknowledges it
// or the agent's run ends.
func (a *Agent) publishFinal(rd contract.Reading) {
	switch err := a.publish(a.runCtx, rd); {
	case err == nil:
		a.sent(rd)
		a.log.Info("final reading sent", "contract", rd.Contract, "reason", rd.Reason, "u", rd.U, "t", time.Duration(rd.T))
	case a.outbox != nil:
		a.log.Warn("final reading not acknowledged; the outbox keeps it for the next run", "contract", rd.Contract, "seq", rd.Seq, "reason", rd.Reason, "err", err)
	default:
		a.log.Error("final reading lost", "contract", rd.Contract, "seq", rd.Seq, "reason", rd.Reason, "u", rd.U, "t", rd.T, "err", err)
	}
}

// launchBooked starts a booked job whose slot has begun and reports the
// start on the server's started subject.
func (a *Agent) launchBooked(id string) {
	started, err := a.node.Launch(a.startCtx, a.now(), id)
	if err != nil {
		a.log.Warn("start booked contract", "contract", id, "err", err)
		return
	}
	a.watch(id)
	a.declare(&started)
	a.reportStarted(started)
}
