package server

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// DefaultCounterTTL is how long counter-offers stand when a policy does not
// say: long enough for a person to read one and take it.
const DefaultCounterTTL = 15 * time.Second

// Reserve is a posted price: it accepts any offer that pays at least its own
// curves everywhere the job could run, asks for no more GPUs than are free,
// and stays within its longest time limit.
type Reserve struct {
	P, Q         contract.Curve // the least the server takes, as offer curves
	MaxTimeLimit time.Duration  // the longest job it takes; 0 for no limit
	CounterTTL   time.Duration  // how long its counter-offers stand; 0 for DefaultCounterTTL
}

var _ Policy = Reserve{}

// String names the policy in the server's heartbeats.
func (r Reserve) String() string { return "reserve" }

// Validate checks the reserve curves as an offer's would be checked.
func (r Reserve) Validate() error {
	for _, c := range []struct {
		name  string
		curve contract.Curve
	}{{"p", r.P}, {"q", r.Q}} {
		if err := c.curve.Validate(); err != nil {
			return fmt.Errorf("reserve %s: %w", c.name, err)
		}
	}
	if r.MaxTimeLimit < 0 || r.CounterTTL < 0 {
		return bourse.Errorf(bourse.EInvalid, "server.Reserve.Validate", "negative duration")
	}
	return nil
}

// Decide accepts the offer or makes one counter-offer: the offer with its
// GPUs cut to those free, its time limit cut to the maximum, and each curve
// that falls short of the reserve replaced by the reserve, with the
// prepayment lowered where it now exceeds the maximum charge. There is no
// counter when no GPU of the class is free.
func (r Reserve) Decide(offer contract.Terms, st State) Decision {
	free := st.FreeFor(offer.Class)
	if free == 0 {
		return Decision{Reason: "no free GPU of the class"}
	}
	c := offer
	var why []string
	if offer.GPUs > free {
		c.GPUs = free
		why = append(why, fmt.Sprintf("%d GPUs wanted, %d free", offer.GPUs, free))
	}
	if r.MaxTimeLimit > 0 && offer.TimeLimit > r.MaxTimeLimit {
		c.TimeLimit = r.MaxTimeLimit
		why = append(why, fmt.Sprintf("time limit %v is over %v", offer.TimeLimit, r.MaxTimeLimit))
	}
	// Prices matter only where the job can run: rates and shares up to the
	// GPUs it gets, which for the counter may be fewer than it asked for.
	g := decimal.NewFromInt(int64(c.GPUs))
	if !covers(offer.P, r.P, g) {
		c.P = slices.Clone(r.P)
		why = append(why, "p is below the reserve")
	}
	if !covers(offer.Q, r.Q, g) {
		c.Q = slices.Clone(r.Q)
		why = append(why, "q is below the reserve")
	}
	if len(why) == 0 {
		return Decision{Accept: true}
	}
	d := Decision{Reason: strings.Join(why, "; ")}
	max := contract.MaxCharge(c, st.Scale)
	if !max.IsPositive() {
		// Nothing valid to propose: an offer's prepayment must be positive
		// and at most its maximum charge.
		return d
	}
	if c.Prepayment.GreaterThan(max) || !c.Prepayment.IsPositive() {
		c.Prepayment = max
	}
	ttl := r.CounterTTL
	if ttl <= 0 {
		ttl = DefaultCounterTTL
	}
	d.Counters, d.ValidUntil = []contract.Terms{c}, st.Now.Add(ttl)
	return d
}

// covers reports whether offer(x) ≥ reserve(x) for every x in [0, g],
// exactly. Both curves are linear between the union of their breakpoints
// and right-continuous, with one jump each, up from zero at the first
// breakpoint; so the difference is smallest at 0, at g, or at a breakpoint
// in between, approached from the right (the value) or from the left.
func covers(offer, reserve contract.Curve, g decimal.Decimal) bool {
	xs := []decimal.Decimal{decimal.Zero, g}
	for _, c := range []contract.Curve{offer, reserve} {
		for _, p := range c {
			if p.X.Sign() > 0 && p.X.LessThan(g) {
				xs = append(xs, p.X)
			}
		}
	}
	for _, x := range xs {
		if less(valueAt(offer, x), valueAt(reserve, x)) {
			return false
		}
		if x.Sign() > 0 && less(leftOf(offer, x), leftOf(reserve, x)) {
			return false
		}
	}
	return true
}

// fraction is num/den with den > 0: interpolating between breakpoints
// divides, and comparing fractions by cross-multiplying keeps it exact.
type fraction struct{ num, den decimal.Decimal }

var zero = fraction{decimal.Zero, decimal.NewFromInt(1)}

func less(a, b fraction) bool { return a.num.Mul(b.den).LessThan(b.num.Mul(a.den)) }

// valueAt is c(x): zero below the first breakpoint, the last y beyond the
// last, linear between.
func valueAt(c contract.Curve, x decimal.Decimal) fraction {
	i := sort.Search(len(c), func(i int) bool { return c[i].X.GreaterThan(x) })
	switch {
	case i == 0:
		return zero
	case i == len(c):
		return fraction{c[i-1].Y, zero.den}
	}
	a, b := c[i-1], c[i]
	dx := b.X.Sub(a.X)
	return fraction{a.Y.Mul(dx).Add(b.Y.Sub(a.Y).Mul(x.Sub(a.X))), dx}
}

// leftOf is the limit of c(y) as y rises to x: c(x) except at or below the
// first breakpoint, where the curve is zero just left of its jump.
func leftOf(c contract.Curve, x decimal.Decimal) fraction {
	if len(c) == 0 || x.LessThanOrEqual(c[0].X) {
		return zero
	}
	return valueAt(c, x)
}
