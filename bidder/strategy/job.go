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
}
