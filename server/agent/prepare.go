package agent

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
)

// startPrepared takes a start whose job needs preparing first (its image
// pulled: server.Preparer): the GPUs become the contract's and the jobs
// it preempts stop, as for any start, and the start is answered at once,
// Preparing; the preparation, the launch and the report of the start
// (bourse.v1.server.<s>.started) follow in the background. A start
// again meanwhile is answered Preparing too.
func (a *Agent) startPrepared(s protocol.Start, p server.Preparer) (protocol.Started, error) {
	plan, err := a.node.Start(a.now(), s)
	switch {
	case err != nil:
		return protocol.Started{}, err
	case plan.Started != nil:
		return *plan.Started, nil // a booking, or a start again
	}
	a.stopAll(plan.Stops, preemptWait)
	id := s.Contract.ID
	started, err := a.node.Preparing(a.now(), id)
	if err != nil {
		return protocol.Started{}, err
	}
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		a.prepareAndLaunch(id, s.Contract.Terms.Job, p)
	}()
	return started, nil
}

// prepareAndLaunch prepares the job, launches it and reports its start;
// where the job cannot start it publishes a final reading of nothing
// used, reason failed, which ends the contract for nothing (the client's
// prepayment back whole), and the client reads why in the job's output.
func (a *Agent) prepareAndLaunch(id string, job *contract.JobSpec, p server.Preparer) {
	began := time.Now() //wallclock: how long a preparation took, for the log
	err := p.Prepare(a.runCtx, job)
	if err != nil {
		a.log.Warn("job not prepared", "contract", id, "err", err)
	}
	// Launch even after a failed preparation: the runner's Start then
	// fails as the preparation did, tells the client why, and gives the
	// GPUs back.
	started, err := a.node.Launch(a.runCtx, a.now(), id)
	if err != nil {
		a.log.Warn("prepared job not started; its contract ends for nothing", "contract", id, "err", err)
		now := a.now()
		a.send(contract.Reading{Contract: id, Seq: 1, U: decimal.Zero, S: decimal.Zero, EnergyJ: decimal.Zero, At: now, Final: true, Reason: contract.ReasonFailed})
		a.changed()
		return
	}
	a.log.Info("prepared job started", "contract", id, "prepared_in", time.Since(began).Round(time.Millisecond)) //wallclock: as above
	a.watch(id)
	a.declare(&started)
	a.changed()
	a.reportStarted(started)
}

// reportStarted tells the exchange that a job started after its start was
// answered (a booking at its slot, a job prepared first), asking again
// while nothing answers: until then the contract is accepted, and voided
// at its start deadline.
func (a *Agent) reportStarted(started protocol.Started) {
	body, _ := protocol.Marshal(started)
	wait := 200 * time.Millisecond
	for a.runCtx.Err() == nil {
		ctx, cancel := context.WithTimeout(a.runCtx, 2*time.Second)
		msg, err := a.nc.RequestWithContext(ctx, protocol.ServerSubject(a.id, protocol.VerbStarted), body)
		cancel()
		if err == nil {
			err = natswire.DecodeError(msg)
		}
		if err == nil || !retryable(bourse.ErrorCode(err)) {
			if err != nil {
				a.log.Warn("report the start of a prepared contract", "contract", started.Contract, "err", err)
			}
			return
		}
		select {
		case <-a.runCtx.Done():
		case <-time.After(wait): //wallclock: pacing: a retry's back-off
		}
		wait = min(2*wait, 5*time.Second)
	}
}
