package strategy

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Deadline pays more as the job's deadline nears. Its price is a fraction
// of the job's value,
//
//	min(1, Base + (1−Base)·elapsed/Window),
//
// where elapsed runs from Window before the job's latest start (its
// deadline less its runtime) to that start: Base while the deadline is far,
// the whole value from the latest start on, never more. A job without a
// deadline gets Base. It takes the cheapest counter-offer within the value.
// It keeps no state, so the same job and time give the same bid.
type Deadline struct {
	Base   decimal.Decimal // fraction of the value to open with, 0.3 by default
	Window time.Duration   // how long before the latest start the price rises; 10·Runtime by default
	Slack  float64
}

var _ Strategy = Deadline{}

func (d Deadline) Bid(j Job, _ int, now time.Time) contract.Terms {
	return terms(j, j.Value.Mul(d.Fraction(j, now)).Truncate(6), d.Slack)
}

// Fraction is the share of the job's value Bid offers at now.
func (d Deadline) Fraction(j Job, now time.Time) decimal.Decimal {
	base := d.Base
	if base.Sign() <= 0 || base.GreaterThan(one) {
		base = decimal.RequireFromString("0.3")
	}
	if j.Deadline.IsZero() {
		return base
	}
	window := d.Window
	if window <= 0 {
		window = 10 * j.Runtime
	}
	if window <= 0 {
		window = time.Minute
	}
	latest := j.Deadline.Add(-j.Runtime)
	left := latest.Sub(now)
	switch {
	case left <= 0:
		return one
	case left >= window:
		return base
	}
	elapsed := decimal.NewFromInt(int64(window - left)).Div(decimal.NewFromInt(int64(window)))
	return decimal.Min(one, base.Add(one.Sub(base).Mul(elapsed)))
}

func (Deadline) Take(j Job, counters []contract.Counter, now time.Time) *contract.Counter {
	return Cheapest{}.Take(j, counters, now)
}

func (Deadline) Observe(bool, time.Duration) {}

var one = decimal.NewFromInt(1)
