package bidder

import (
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/trade"
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

// Strategy decides what a bidding agent offers for a job and how it answers
// counter-offers. The simulator runs the same strategies.
type Strategy interface {
	// Bid returns the terms to offer for j, after `rejected` earlier
	// rejections of it, at time now.
	Bid(j Job, rejected int, now time.Time) contract.Terms
	// Take picks the counter-offer to take, or nil to bid again later.
	Take(j Job, counters []trade.Counter, now time.Time) *trade.Counter
	// Observe learns how an offer fared: accepted, and how long it took.
	Observe(accepted bool, waited time.Duration)
}

// Fixed offers the job's value as a flat price and never takes counters.
type Fixed struct {
	// Slack multiplies the runtime into the time limit, 1.5 by default.
	Slack float64
}

func (f Fixed) Bid(j Job, _ int, _ time.Time) contract.Terms { return terms(j, j.Value, f.Slack) }
func (Fixed) Take(Job, []trade.Counter, time.Time) *trade.Counter {
	return nil
}
func (Fixed) Observe(bool, time.Duration) {}

// Cheapest offers a share of the job's value (at most all of it) and takes
// the cheapest counter-offer whose full-use price stays within the value.
type Cheapest struct {
	Start decimal.Decimal // fraction of the value to open with, 0.5 by default
	Slack float64
}

func (c Cheapest) Bid(j Job, _ int, _ time.Time) contract.Terms {
	start := c.Start
	if start.Sign() <= 0 {
		start = decimal.RequireFromString("0.5")
	}
	start = decimal.Min(start, one) // never beyond the value
	return terms(j, j.Value.Mul(start), c.Slack)
}

func (Cheapest) Take(j Job, counters []trade.Counter, now time.Time) *trade.Counter {
	var best *trade.Counter
	var bestPrice decimal.Decimal
	full := decimal.NewFromInt(int64(j.GPUs))
	for i := range counters {
		k := &counters[i]
		if k.ValidUntil.Before(now) || k.Terms.GPUs != j.GPUs {
			continue
		}
		p := k.Terms.P.Eval(full)
		if p.GreaterThan(j.Value) {
			continue
		}
		if best == nil || p.LessThan(bestPrice) {
			best, bestPrice = k, p
		}
	}
	return best
}

func (Cheapest) Observe(bool, time.Duration) {}

// terms builds a flat-price offer for j with a prepayment that covers full
// use for the whole time limit.
func terms(j Job, price decimal.Decimal, slack float64) contract.Terms {
	if slack <= 1 {
		slack = 1.5
	}
	limit := time.Duration(float64(j.Runtime) * slack).Round(time.Second)
	if limit < time.Second {
		limit = time.Second
	}
	t := contract.Terms{
		Currency: j.Currency, GPUs: j.GPUs, Class: j.Class, TimeLimit: limit,
		P: contract.Flat(price), Preemptible: j.Preemptible,
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: j.Utilization, Duration: j.Runtime}},
	}
	t.Prepayment = contract.MaxCharge(t, j.Scale)
	return t
}

// Adaptive opens low and raises its price by Step of the value after each
// rejection of a job, up to the value; a quick acceptance lowers its next
// opening bid by Step, a slow one raises it.
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

func (a *Adaptive) Take(j Job, counters []trade.Counter, now time.Time) *trade.Counter {
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
