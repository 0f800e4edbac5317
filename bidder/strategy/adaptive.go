package strategy

import (
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Adaptive opens low and raises its price by Step of the value after each
// rejection of a job, up to the value. Across jobs it learns an opening
// bid: a quick acceptance lowers it by Step, a rejection raises it, a slow
// acceptance leaves it. Quick is judged by the latency Observe is told,
// which a Negotiator measures on the clock that drives it (virtual in the
// simulator), not by reading the wall clock. It is safe for concurrent use
// by several negotiations.
type Adaptive struct {
	Step  decimal.Decimal // 0.1 by default
	Quick time.Duration   // acceptances faster than this were too generous, 100ms
	Slack float64

	mu    sync.Mutex
	level decimal.Decimal // opening fraction of the value
}

func (a *Adaptive) Bid(j Job, rejected int, _ time.Time) contract.Terms {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.level.IsZero() {
		a.level = decimal.RequireFromString("0.4")
	}
	f := a.level.Add(a.step().Mul(decimal.NewFromInt(int64(rejected))))
	if f.GreaterThan(decimal.NewFromInt(1)) {
		f = decimal.NewFromInt(1)
	}
	return terms(j, j.Value.Mul(f).Truncate(6), a.Slack)
}

func (a *Adaptive) Take(j Job, counters []contract.Counter, now time.Time) *contract.Counter {
	return Cheapest{}.Take(j, counters, now)
}

func (a *Adaptive) Observe(accepted bool, waited time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	quick := a.Quick
	if quick <= 0 {
		quick = 100 * time.Millisecond
	}
	min, max := decimal.RequireFromString("0.1"), decimal.NewFromInt(1)
	switch {
	case accepted && waited < quick:
		a.level = decimal.Max(min, a.level.Sub(a.step()))
	case !accepted:
		a.level = decimal.Min(max, a.level.Add(a.step()))
	}
}

func (a *Adaptive) step() decimal.Decimal {
	if a.Step.IsZero() {
		return decimal.RequireFromString("0.1")
	}
	return a.Step
}
