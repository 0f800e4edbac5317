package strategy

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Job is work a client wants done: what it needs and what it is worth.
type Job struct {
	Name     string
	Currency string
	GPUs     int
	Class    contract.Class
	// Runtime is the expected run time at full use; the time limit is
	// Runtime·Slack.
	Runtime     time.Duration
	Utilization decimal.Decimal // expected busy fraction of each GPU, 0..1
	// Value is the most the client will pay per GPU-second of use.
	Value decimal.Decimal
	// Deadline is when the job must be done, zero for none.
	Deadline    time.Time
	Preemptible bool
	// Scale is the currency's decimal places, for the prepayment.
	Scale int32
	// Image, Command and Args are the real work to run, as
	// contract.JobSpec has them: an image a server that runs containers
	// pulls (with Command in place of its entrypoint and Args of its
	// command), or a program a server lists. Without either the job is
	// synthetic: it keeps its GPUs Utilization busy for Runtime.
	Image   string
	Command string
	Args    []string
	// Files, with an image or a command, are the client's files the job
	// works on, put where its server will fetch them
	// (bidder.Client.PutFiles gives them).
	Files *contract.Files
}

// spec is what the offer asks the server to run.
func (j Job) spec() *contract.JobSpec {
	if j.Image != "" || j.Command != "" {
		return &contract.JobSpec{Image: j.Image, Command: j.Command, Args: j.Args, Files: j.Files}
	}
	return &contract.JobSpec{Profile: &contract.Profile{Utilization: j.Utilization, Duration: j.Runtime}}
}
