package server

import (
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// FullUse is the meter of a server that cannot measure GPU use (no NVIDIA
// driver, or NVML refused) whose operator chose to charge as if every GPU
// of a job were busy the whole time: U = GPUs × T, and no energy. It is a
// choice, never a default: the client pays the most its terms allow for
// the time, and the contract says so (contract.MeterFullUse).
type FullUse struct {
	Now func() time.Time // nil for time.Now
}

var _ Meter = FullUse{}

// Kind is contract.MeterFullUse.
func (FullUse) Kind() contract.Meter { return contract.MeterFullUse }

// Track starts counting the job's GPUs busy from now. A job's runner
// should call it before it starts the job's clock, so that U is never
// short of GPUs × T (the process runner caps U at that).
func (f FullUse) Track(gpus []contract.GPU, _ func(pid int) bool) (Gauge, error) {
	now := f.Now
	if now == nil {
		now = time.Now
	}
	return &fullGauge{now: now, gpus: decimal.NewFromInt(int64(len(gpus))), start: now()}, nil
}

type fullGauge struct {
	now   func() time.Time
	gpus  decimal.Decimal
	start time.Time

	mu      sync.Mutex
	stopped time.Time // zero while it runs
}

func (g *fullGauge) Read() (u, energyJ decimal.Decimal) {
	g.mu.Lock()
	end := g.stopped
	g.mu.Unlock()
	if end.IsZero() {
		end = g.now()
	}
	return g.gpus.Mul(seconds(max(end.Sub(g.start), 0))), decimal.Zero
}

func (g *fullGauge) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped.IsZero() {
		g.stopped = g.now()
	}
}
