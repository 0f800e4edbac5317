package server

import (
	"context"
	"io"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Runner starts the jobs of contracts. The Synthetic runner consumes a
// job's profile; the process runner (package process) starts
// JobSpec.Command with CUDA_VISIBLE_DEVICES set to the assigned GPUs, its
// jobs measured by a Meter.
//
// A runner may also implement Checker; the node then refuses offers whose
// job it could not start before it asks the policy.
type Runner interface {
	// Start starts the job on the assigned GPUs. ctx bounds the start,
	// not the job: the job runs until it ends or is stopped.
	Start(ctx context.Context, a Assignment) (Job, error)
}

// Checker is a Runner that can tell, before an offer is accepted, that it
// could not start the offer's job.
type Checker interface {
	// Check returns a *bourse.Error (EInvalidOffer, EPermission) saying why
	// the job cannot run here, or nil.
	Check(job *contract.JobSpec) error
}

// Describer is a Runner that says what it runs (protocol.Runs): the node
// says it in its hello, so that the exchange offers it only jobs it runs,
// and refuses the others itself by the same rule (contract.Runs.Refuses). A runner
// that does not say is taken to run no program.
type Describer interface {
	Runs() protocol.Runs
}

// Metered is a Runner that says how its jobs are measured: the node puts
// it in the start it reports, and the exchange on the contract.
type Metered interface {
	Meter() contract.Meter
}

// Preparer is a Runner whose jobs may need a slow preparation before they
// start (a container image pulled from its registry): the agent answers
// the exchange's start at once (protocol.Started.Preparing), prepares in
// the background, then launches the job and reports its start, so that a
// pull of minutes neither holds the start's answer past the exchange's
// patience nor the starts of other contracts.
type Preparer interface {
	// Prepares says whether job needs Prepare before Start.
	Prepares(job *contract.JobSpec) bool
	// Prepare does what Start would otherwise do first and slowly;
	// Start then finds it done. Its error is the job's, as Start's is.
	Prepare(ctx context.Context, job *contract.JobSpec) error
}

// Slotted is a Runner whose jobs each need a slot besides their GPUs (a
// job user of a pool): the node offers no GPUs while no slot is free,
// rather than accept work it could not start. limited is false where
// slots are not limited.
type Slotted interface {
	FreeSlots() (free int, limited bool)
}

// Imaged is a Job that runs a container image: it says the image's
// digest, which the node puts in the start it reports, and the exchange
// on the contract.
type Imaged interface {
	Image() string
}

// Assignment is a job to start and the GPUs it gets.
type Assignment struct {
	Contract string
	Job      *contract.JobSpec // nil where the contract carries no job
	GPUs     []contract.GPU
	// TimeLimit is the contract's; the node stops the job then, and a
	// runner may enforce it too, as a backstop. Zero for none.
	TimeLimit time.Duration
	// Resumes names the suspended contract whose job this one continues,
	// for runners that can resume a job they stopped.
	Resumes string
	// Files fetches the job's files, where its terms name them; nil
	// where the node has nothing to fetch them with.
	Files Files
}

// Files fetches a job's files (contract.Files) for its runner, before
// the job starts: the agent asks the exchange, which hands a server the
// files of its own contracts alone.
type Files interface {
	// Fetch writes the files of contract's job to w, as the exchange
	// hands them. The runner checks what it was handed against the
	// terms (their digest and size), whoever handed it.
	Fetch(ctx context.Context, contract string, w io.Writer) error
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
	Stop(ctx context.Context, reason contract.Reason) error
}

// Measurement is what a meter has measured of a job, cumulatively.
type Measurement struct {
	U        decimal.Decimal // GPU-seconds busy, summed over the GPUs
	T        time.Duration   // wall time since the start
	S        decimal.Decimal // GPUs continuously available to the job
	EnergyJ  decimal.Decimal // joules the GPUs drew, where the meter knows
	ExitCode *int            // set once the job's process exited, by itself or stopped
}
