// Package strategy is what a bidding agent decides, and the rules of a
// negotiation, without NATS, goroutines or the wall clock: a Job, the
// Strategy that prices it and answers counter-offers (Fixed, Cheapest,
// Adaptive, Deadline, or one of your own), and a Negotiator, the
// negotiation's rules as a state machine that says what to do next and is
// told what the exchange answered. Negotiate drives one over an Exchange,
// which the NATS client (package bidder) and an in-process exchange both
// are; the simulator steps Negotiators on its virtual clock. Strategies
// and Negotiators read the time only from the now they are given, so the
// same answers at the same times make the same offers.
package strategy

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Strategy decides what a bidding agent offers for a job and how it answers
// counter-offers. The simulator runs the same strategies, so a strategy
// takes the time only from what it is given (now, and the latency Observe
// is told), never from time.Now.
type Strategy interface {
	// Bid returns the terms to offer for j, after `rejected` earlier
	// rejections of it, at time now.
	Bid(j Job, rejected int, now time.Time) contract.Terms
	// Take picks the counter-offer to take, or nil to bid again later.
	Take(j Job, counters []contract.Counter, now time.Time) *contract.Counter
	// Observe learns how a round fared: accepted, and how long it took
	// from the offer to the answer that ended it.
	Observe(accepted bool, waited time.Duration)
}

// Fixed offers the job's value as a flat price and never takes counters.
type Fixed struct {
	// Slack multiplies the runtime into the time limit, 1.5 by default.
	Slack float64
}

func (f Fixed) Bid(j Job, _ int, _ time.Time) contract.Terms { return terms(j, j.Value, f.Slack) }
func (Fixed) Take(Job, []contract.Counter, time.Time) *contract.Counter {
	return nil
}
func (Fixed) Observe(bool, time.Duration) {}

// Cheapest offers a share of the job's value (at most all of it) and takes
// the cheapest counter-offer whose price at full use
// (contract.Terms.FullUsePrice: P and Q with all the job's GPUs busy, per
// GPU-second) stays within the value.
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

// Take compares prices exactly, so a counter-offer at the value is within
// it however its curves divide; of those within it, the first in
// CompareCounters' order.
func (Cheapest) Take(j Job, counters []contract.Counter, now time.Time) *contract.Counter {
	value := contract.Flat(j.Value).At(decimal.Zero) // the value as an exact rate
	var best *contract.Counter
	for i := range counters {
		k := &counters[i]
		if k.ValidUntil.Before(now) || k.Terms.GPUs != j.GPUs || k.Terms.FullUsePrice().Cmp(value) > 0 {
			continue
		}
		if best == nil || CompareCounters(*k, *best) < 0 {
			best = k
		}
	}
	return best
}

func (Cheapest) Observe(bool, time.Duration) {}

// terms builds a flat-price offer for j whose prepayment is the maximum
// charge: full use for the whole time limit.
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
		Job: j.spec(),
	}
	t.Prepayment = t.CappedPrepayment(j.Scale)
	return t
}
