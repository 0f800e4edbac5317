package server

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Runner starts the jobs of contracts. The Synthetic runner consumes a
// job's profile; a process runner is to start JobSpec.Command with
// CUDA_VISIBLE_DEVICES set to the assigned GPUs, its jobs measured by NVML.
type Runner interface {
	// Start starts the job on the assigned GPUs. ctx bounds the start,
	// not the job: the job runs until it ends or is stopped.
	Start(ctx context.Context, a Assignment) (Job, error)
}

// Assignment is a job to start and the GPUs it gets.
type Assignment struct {
	Contract string
	Job      *contract.JobSpec // nil where the contract carries no job
	GPUs     []protocol.GPU
}

// Job is a started job and its meter.
type Job interface {
	// Measure reads the job's usage so far, cumulative since it started;
	// once the job has ended the reading no longer changes.
	Measure() (Measurement, error)
	// Done is closed when the job has ended, by itself or by Stop.
	Done() <-chan struct{}
	// Stop ends the job: reason is ReasonSuspended for a job that should
	// checkpoint first, anything else to kill it. Stopping an ended job
	// does nothing.
	Stop(ctx context.Context, reason protocol.Reason) error
}

// Measurement is what a meter has measured of a job, cumulatively.
type Measurement struct {
	U        decimal.Decimal // GPU-seconds busy, summed over the GPUs
	T        time.Duration   // wall time since the start
	S        decimal.Decimal // GPUs continuously available to the job
	EnergyJ  decimal.Decimal // joules the GPUs drew, where the meter knows
	ExitCode *int            // set once the job ended by itself
}
