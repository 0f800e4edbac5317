package strategy

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// Prices is what the market data says contracts cost lately: the median
// price per GPU-second used that the contracts settled in a currency for
// a GPU model ("any" for offers that name none) paid, weighted by the
// GPU-seconds they used, and whether any paid for use. bidder.MarketPrices reads it from the exchange's market data; the
// simulator from its House.
type Prices interface {
	Median(currency, model string) (decimal.Decimal, bool)
}

// Going bids the going rate: the median price paid per GPU-second used
// by the contracts settled lately for the job's currency and model, within the
// job's value, and after each rejection Step of the way from there to the
// value. Where the market has made no such contract it opens at half the
// value. It takes the cheapest counter-offer within the value (Cheapest).
type Going struct {
	Prices Prices
	Step   decimal.Decimal // 0.25 by default
	Slack  float64
}

func (g Going) Bid(j Job, rejected int, _ time.Time) contract.Terms {
	open := j.Value.Mul(decimal.RequireFromString("0.5"))
	model := j.Class.Model
	if model == "" {
		model = "any"
	}
	if g.Prices != nil {
		if m, ok := g.Prices.Median(j.Currency, model); ok && m.IsPositive() {
			open = decimal.Min(m, j.Value)
		}
	}
	step := g.Step
	if step.Sign() <= 0 {
		step = decimal.RequireFromString("0.25")
	}
	f := decimal.Min(one, step.Mul(decimal.NewFromInt(int64(rejected))))
	price := open.Add(j.Value.Sub(open).Mul(f))
	return terms(j, price.Truncate(j.Scale+6), g.Slack)
}

func (Going) Take(j Job, counters []contract.Counter, now time.Time) *contract.Counter {
	return Cheapest{}.Take(j, counters, now)
}

func (Going) Observe(bool, time.Duration) {}
