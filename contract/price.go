package contract

import (
	"github.com/shopspring/decimal"
)

// Price is an exact non-negative price, num/den with den > 0: interpolating
// a curve divides, and comparing by cross-multiplying keeps comparisons of
// prices exact, so that a server's reserve and a client's bid never
// disagree by a rounding.
type Price struct{ num, den decimal.Decimal }

// Cmp compares two rates exactly: -1, 0 or +1.
func (r Price) Cmp(s Price) int { return r.num.Mul(s.den).Cmp(s.num.Mul(r.den)) }

// Exceeds says whether the rate is above d, exactly.
func (r Price) Exceeds(d decimal.Decimal) bool { return r.num.Cmp(d.Mul(r.den)) > 0 }

// Decimal is the rate rounded half up at places decimal places, for
// showing and for arithmetic that may round.
func (r Price) Decimal(places int32) decimal.Decimal {
	if r.den.Equal(one) {
		return r.num
	}
	return r.num.DivRound(r.den, places)
}

// Floor is the price rounded down at places decimal places: never above
// it. Ceil is it rounded up: never below it. Each rounds once, from the
// exact price.
func (r Price) Floor(places int32) decimal.Decimal {
	q, _ := r.num.QuoRem(r.den, places)
	return q
}

// Ceil: see Floor.
func (r Price) Ceil(places int32) decimal.Decimal {
	q, rem := r.num.QuoRem(r.den, places)
	if !rem.IsZero() {
		q = q.Add(decimal.New(1, -places))
	}
	return q
}

// At is the curve's value at x, exactly.
func (c Curve) At(x decimal.Decimal) Price {
	num, den := c.at(x, one)
	return Price{num, den}
}

// below is the limit of the curve's value as its argument rises to x:
// the value at x, except at or below the first breakpoint, where the curve
// is zero just left of its jump.
func (c Curve) below(x decimal.Decimal) Price {
	if len(c) == 0 || x.LessThanOrEqual(c[0].X) {
		return Price{decimal.Zero, one}
	}
	return c.At(x)
}

// Covers reports whether c(x) ≥ reserve(x) for every x in [0, g], exactly:
// whether an offer's curve pays at least a reserve wherever a job of g
// GPUs can be. Both curves are linear between the union of their
// breakpoints and right-continuous, with one jump each (up from zero at
// the first breakpoint), so the difference is smallest at 0, at g, or at a
// breakpoint between, approached from the right (the value) or from the
// left.
func (c Curve) Covers(reserve Curve, g decimal.Decimal) bool {
	xs := []decimal.Decimal{decimal.Zero, g}
	for _, k := range []Curve{c, reserve} {
		for _, p := range k {
			if p.X.Sign() > 0 && p.X.LessThan(g) {
				xs = append(xs, p.X)
			}
		}
	}
	for _, x := range xs {
		if !coversAt(c, reserve, x) {
			return false
		}
	}
	return true
}

// coversAt reports whether c(x) ≥ reserve(x) and, for x > 0, whether
// the same holds of their limits from the left: on fixed numbers where
// they do not overflow (exact.go), else on decimals.
func coversAt(c, reserve Curve, x decimal.Decimal) bool {
	if fx, ok := fix(x); ok {
		at, ok := fixedPriceCmp(c, reserve, fx, false)
		below, okBelow := 0, true
		if ok && x.Sign() > 0 {
			below, okBelow = fixedPriceCmp(c, reserve, fx, true)
		}
		if ok && okBelow {
			return at >= 0 && below >= 0
		}
	}
	return c.At(x).Cmp(reserve.At(x)) >= 0 && (x.Sign() <= 0 || c.below(x).Cmp(reserve.below(x)) >= 0)
}

// FullUsePrice is what the terms pay per GPU-second when all g GPUs are
// busy for the whole time: (P(g)·g + Q(g))/g, exactly. It is the one
// price by which offers, counters and running contracts are compared: what
// a server earns per GPU it gives, and what a client pays per GPU it gets.
func (t Terms) FullUsePrice() Price {
	g := decimal.NewFromInt(int64(max(t.GPUs, 1)))
	p, q := t.P.At(g), t.Q.At(g)
	return Price{p.num.Mul(g).Mul(q.den).Add(q.num.Mul(p.den)), p.den.Mul(q.den).Mul(g)}
}

// SurePrice is what the terms are sure to pay per GPU-second, whatever
// the job does: the least of
//
//   - P(0) + Q(g)/g, the least they pay per GPU-second of use at any rate
//     of use, to a server that keeps their g GPUs available (P and Q
//     never decrease, so no use pays less per GPU-second than none), and
//   - Prepayment/(g·L), the most they can pay per GPU-second of the g GPUs
//     held for the time limit L (the charge never passes the prepayment),
//
// exactly. A curve dear only at full use is sure of its price at no use,
// and a small prepayment is sure of little: an offer cannot claim more
// than it will pay. It orders the exchange's book.
func (t Terms) SurePrice() Price {
	g := decimal.NewFromInt(int64(max(t.GPUs, 1)))
	p, q := t.P.At(decimal.Zero), t.Q.At(g)
	floor := Price{p.num.Mul(g).Mul(q.den).Add(q.num.Mul(p.den)), p.den.Mul(q.den).Mul(g)}
	if t.TimeLimit <= 0 {
		return floor
	}
	prepaid := Price{decimal.Max(t.Prepayment, decimal.Zero), g.Mul(seconds(t.TimeLimit))}
	if prepaid.Cmp(floor) < 0 {
		return prepaid
	}
	return floor
}

// CappedPrepayment is the prepayment the terms may carry at the currency's
// scale: the maximum charge (MaxCharge) where the prepayment is not
// positive or is more than that, else the prepayment. An offer that names
// no prepayment escrows what full use for the whole time limit costs; one
// that names more escrows no more than it could ever be charged.
func (t Terms) CappedPrepayment(scale int32) decimal.Decimal {
	m := MaxCharge(t, scale)
	if !t.Prepayment.IsPositive() || t.Prepayment.GreaterThan(m) {
		return m
	}
	return t.Prepayment
}

// secondsPerHour turns a price per second into one per hour.
var secondsPerHour = decimal.NewFromInt(3600)

// PerHour is a price per GPU-second (or per second) as a price per
// GPU-hour (per hour), exactly: how people read and compare GPU prices.
// The wire and the charge stay per second.
func PerHour(perSecond decimal.Decimal) decimal.Decimal { return perSecond.Mul(secondsPerHour) }
