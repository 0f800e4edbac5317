package server

import (
	"github.com/bourse/bourse/contract"
	"github.com/shopspring/decimal"
)

// Meter measures the GPU use of jobs that run as processes. The NVML meter
// (package nvmlmeter) is the real one; FullUse is the fallback an operator
// may choose where there is none. A process runner without a meter runs
// no job: it could charge nothing for it.
type Meter interface {
	// Kind says how it measures, for the contract's record.
	Kind() contract.Meter
	// Track starts measuring a job on its assigned GPUs. owns tells the
	// job's processes from others on the same GPUs; a meter that reads
	// whole devices need not call it.
	Track(gpus []contract.GPU, owns func(pid int) bool) (Gauge, error)
}

// Gauge is a Meter's running measurement of one job.
type Gauge interface {
	// Read returns the GPU-seconds busy and the joules drawn, cumulative
	// since Track, as of the latest sample.
	Read() (u, energyJ decimal.Decimal)
	// Stop takes a last sample and ends the measurement: Read returns the
	// same values from then on. Stopping twice does nothing.
	Stop()
}
