package server

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Carrying out what the node asks of its driver is written once, here:
// the agent over NATS (server/agent), the simulator (sim) and the rules'
// harness (exchange/housetest) differ only in how they wait for the jobs
// they stop and where they send the final readings.

// Begin carries out the exchange's start s: the node's plan (Start), the
// jobs it preempts stopped by stop, which returns once they have (each by
// StopJob), then the launch (Launch). clock is read at each step, since
// stopping takes time. launching reports whether it came to the launch,
// which err then reports on: not for a start refused, a booking confirmed
// for its slot, or a start answered before.
func (n *Node) Begin(ctx context.Context, clock func() time.Time, s protocol.Start, stop func([]Stop)) (started protocol.Started, launching bool, err error) {
	plan, err := n.Start(clock(), s)
	switch {
	case err != nil:
		return protocol.Started{}, false, err
	case plan.Started != nil:
		return *plan.Started, false, nil
	}
	stop(plan.Stops)
	started, err = n.Launch(ctx, clock(), s.Contract.ID)
	return started, true, err
}

// StopJob stops s's job and makes its final reading (Stopped), which the
// driver must hand to the exchange. A job that fails to stop is logged
// and read all the same: its process is gone or beyond reach either way.
func (n *Node) StopJob(ctx context.Context, clock func() time.Time, s Stop) (contract.Reading, error) {
	if err := s.Job.Stop(ctx, s.Reason); err != nil {
		n.log.Warn("stop", "contract", s.Contract, "err", err)
	}
	return n.Stopped(clock(), s.Contract)
}

// StopJobs stops each job of stops in turn (StopJob) and hands final each
// final reading: for drivers that stop jobs one after another, as the
// simulator and the harness do to stay deterministic.
func (n *Node) StopJobs(ctx context.Context, clock func() time.Time, stops []Stop, final func(contract.Reading)) {
	for _, s := range stops {
		if r, err := n.StopJob(ctx, clock, s); err == nil {
			final(r)
		}
	}
}
