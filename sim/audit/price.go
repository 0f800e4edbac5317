package audit

import (
	"fmt"
	"math/big"
	"regexp"
)

var decimalText = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// This file is docs/pricing.md's formula written again from the page, on
// math/big's exact rationals, without package contract: an audit that
// called the code it audits would find nothing. It is slower than
// contract's fixed-point arithmetic and meant to be: it has nothing to be
// clever about.

// point is a breakpoint of a price curve.
type point struct{ x, y *big.Rat }

// curve is a piecewise-linear price curve: zero below the first x, the
// first y at it, linear between breakpoints, the last y from the last x on.
// An empty curve is the zero function.
type curve []point

// at is the curve's value at x.
func (c curve) at(x *big.Rat) *big.Rat {
	switch {
	case len(c) == 0 || x.Cmp(c[0].x) < 0:
		return new(big.Rat)
	case x.Cmp(c[len(c)-1].x) >= 0:
		return c[len(c)-1].y
	}
	for i := 1; i < len(c); i++ {
		a, b := c[i-1], c[i]
		if x.Cmp(b.x) < 0 {
			// y = a.y + (b.y − a.y)·(x − a.x)/(b.x − a.x)
			t := new(big.Rat).Sub(x, a.x)
			t.Mul(t, new(big.Rat).Sub(b.y, a.y))
			t.Quo(t, new(big.Rat).Sub(b.x, a.x))
			return t.Add(t, a.y)
		}
	}
	return c[len(c)-1].y // not reached: x < the last x was found above
}

// terms are what prices a contract, as the accepted line writes them.
type terms struct {
	gpus       int64
	limit      *big.Rat // L, seconds
	prepayment *big.Rat
	p, q       curve
	scale      int32
}

// usage is a final reading, as the settled line writes it.
type usage struct{ u, t, s *big.Rat } // U GPU-seconds, T seconds, S GPUs

// settlement is the charge and refund the formula gives.
type settlement struct{ charge, refund *big.Rat }

// settle prices usage under terms as docs/pricing.md says:
//
//  1. clamp: T to [0, L], U to [0, g·T], S to [0, g]; U and S truncated
//     to 18 decimal places;
//  2. amount = U·P(U/T) + T·Q(S), zero when T = 0;
//  3. the amount truncated toward zero to the currency's scale;
//  4. charge = min(that, prepayment), refund = prepayment − charge.
func settle(t terms, x usage) (settlement, error) {
	for _, q := range []struct {
		name string
		v    *big.Rat
	}{{"u", x.u}, {"t_s", x.t}, {"s", x.s}} {
		if q.v.Sign() < 0 {
			return settlement{}, fmt.Errorf("%s is negative (%s): a bug, not noise", q.name, q.v.RatString())
		}
	}
	g := new(big.Rat).SetInt64(t.gpus)
	T := minRat(x.t, t.limit)
	U := truncate(minRat(x.u, new(big.Rat).Mul(g, T)), 18)
	S := truncate(minRat(x.s, g), 18)
	amount := new(big.Rat)
	if T.Sign() > 0 {
		r := new(big.Rat).Quo(U, T)
		amount.Mul(U, t.p.at(r))
		amount.Add(amount, new(big.Rat).Mul(T, t.q.at(S)))
	}
	charge := minRat(truncate(amount, t.scale), t.prepayment)
	return settlement{charge: charge, refund: new(big.Rat).Sub(t.prepayment, charge)}, nil
}

func minRat(a, b *big.Rat) *big.Rat {
	if a.Cmp(b) <= 0 {
		return a
	}
	return b
}

// truncate cuts a non-negative x to places decimal places, toward zero.
func truncate(x *big.Rat, places int32) *big.Rat {
	unit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	n := new(big.Int).Mul(x.Num(), unit)
	n.Quo(n, x.Denom()) // x ≥ 0: Quo truncates toward zero
	return new(big.Rat).SetFrac(n, unit)
}

// parseDecimal reads a decimal string exactly ("1.23", "-0.5", "7"), and
// nothing else big.Rat would take ("1/3", "1e5"): the log writes
// decimals.
func parseDecimal(s string) (*big.Rat, error) {
	if !decimalText.MatchString(s) {
		return nil, fmt.Errorf("%q is not a decimal number", s)
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%q is not a decimal number", s)
	}
	return r, nil
}
