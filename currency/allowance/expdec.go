package allowance

import (
	"github.com/shopspring/decimal"
)

// precision is the decimal places every intermediate of the decay factor
// keeps: far more than any currency's scale, and the same on every
// machine (shopspring/decimal computes on big integers), so that two
// schedulers mint the same cents.
const precision = 40

// expNeg returns e^(−x) for x ≥ 0 to precision places, deterministically:
// x is halved until it is at most 1/100, the series summed there, and the
// result squared back up.
func expNeg(x decimal.Decimal) decimal.Decimal {
	if x.IsZero() {
		return decimal.NewFromInt(1)
	}
	halvings := 0
	small := decimal.New(1, -2) // below 1/64
	r := x
	for r.GreaterThan(small) {
		r = r.DivRound(decimal.NewFromInt(2), precision+10)
		halvings++
	}
	// e^(−r) = Σ (−r)^n / n!, to well past precision.
	sum, term := decimal.NewFromInt(1), decimal.NewFromInt(1)
	eps := decimal.New(1, -(precision + 8))
	for n := int64(1); term.Abs().GreaterThan(eps); n++ {
		term = term.Mul(r.Neg()).DivRound(decimal.NewFromInt(n), precision+10)
		sum = sum.Add(term)
	}
	for range halvings {
		sum = sum.Mul(sum).Round(precision + 10)
	}
	return sum.Round(precision)
}

// pow returns q^n to precision places by repeated squaring.
func pow(q decimal.Decimal, n int64) decimal.Decimal {
	result, base := decimal.NewFromInt(1), q
	for n > 0 {
		if n&1 == 1 {
			result = result.Mul(base).Round(precision)
		}
		base = base.Mul(base).Round(precision)
		n >>= 1
	}
	return result
}
