package contract

import (
	"fmt"
	"sort"

	"github.com/bourse/bourse"
	"github.com/shopspring/decimal"
)

// MaxPoints is the most breakpoints a curve may have. Costello's ramp needs
// two; 64 leaves room for stepped and measured curves while keeping offers
// small and every evaluation a short search.
const MaxPoints = 64

// evalPlaces is the precision of Eval. Charge does not use it: it prices
// with exact fractions and rounds once.
const evalPlaces = 30

// Point is a breakpoint of a Curve.
type Point struct {
	X, Y decimal.Decimal
}

// Curve is a piecewise-linear, non-decreasing price function given by its
// breakpoints (x0,y0)…(xn,yn): zero below x0, y0 at x0, linear between
// breakpoints, yn from xn on. The empty curve is the zero function ("no
// term"). A valid curve has at most MaxPoints points, strictly increasing x,
// non-decreasing y and no negative coordinates; see Validate.
type Curve []Point

// Flat is the constant price p, for any rate from zero up.
func Flat(p decimal.Decimal) Curve {
	return Curve{{X: decimal.Zero, Y: p}}
}

// Ramp is Costello's three-parameter price: nothing below rmin, rising
// linearly to pmax at rmax, pmax beyond. It is valid when 0 ≤ rmin < rmax
// and pmax ≥ 0.
func Ramp(rmin, rmax, pmax decimal.Decimal) Curve {
	return Curve{{X: rmin, Y: decimal.Zero}, {X: rmax, Y: pmax}}
}

// Eval returns the curve's value at x, rounded half up at the 30th decimal
// place where the interpolation does not terminate. It is meant for valid
// curves; on others it returns some value without panicking.
func (c Curve) Eval(x decimal.Decimal) decimal.Decimal {
	num, den := c.at(x, one)
	if den.Equal(one) {
		return num
	}
	return num.DivRound(den, evalPlaces)
}

// at returns the curve's value at n/d as the exact fraction num/den, for
// d > 0. Pricing U·P(U/T) this way compares U with x·T instead of dividing,
// so no rounding happens before the final one.
func (c Curve) at(n, d decimal.Decimal) (num, den decimal.Decimal) {
	// i counts the breakpoints at or left of n/d.
	i := sort.Search(len(c), func(i int) bool { return c[i].X.Mul(d).Cmp(n) > 0 })
	switch {
	case i == 0:
		return decimal.Zero, one
	case i == len(c):
		return c[i-1].Y, one
	}
	a, b := c[i-1], c[i]
	dx := b.X.Sub(a.X)
	if dx.Sign() <= 0 { // only an invalid, unsorted curve gets here
		return b.Y, one
	}
	// a.Y + (b.Y−a.Y)·(n/d − a.X)/dx, over the common denominator d·dx.
	num = a.Y.Mul(d).Mul(dx).Add(b.Y.Sub(a.Y).Mul(n.Sub(a.X.Mul(d))))
	return num, d.Mul(dx)
}

// Validate reports the first broken rule as a *bourse.Error with code
// EInvalidCurve and a field such as "[2].x" (Validate of Terms prefixes it
// with "p" or "q").
func (c Curve) Validate() error {
	return c.validate("contract.Curve.Validate", "")
}

func (c Curve) validate(op, field string) error {
	if len(c) > MaxPoints {
		return fail(bourse.EInvalidCurve, op, field, "%d points; at most MaxPoints (%d)", len(c), MaxPoints)
	}
	for i, p := range c {
		// The field's name is made only for an error: curves are checked
		// on every offer, by the exchange and by every server.
		at := func() string { return fmt.Sprintf("%s[%d]", field, i) }
		for _, v := range []struct {
			name string
			d    decimal.Decimal
		}{{".x", p.X}, {".y", p.Y}} {
			if why := checkNumber(v.d); why != "" {
				return fail(bourse.EInvalidCurve, op, at()+v.name, "%s", why)
			}
			if v.d.Sign() < 0 {
				return fail(bourse.EInvalidCurve, op, at()+v.name, "negative: %s", v.d)
			}
		}
		if i == 0 {
			continue
		}
		switch prev := c[i-1]; {
		case p.X.Equal(prev.X):
			return fail(bourse.EInvalidCurve, op, at()+".x", "duplicate x %s", p.X)
		case p.X.LessThan(prev.X):
			return fail(bourse.EInvalidCurve, op, at()+".x", "unsorted: x %s after %s", p.X, prev.X)
		case p.Y.LessThan(prev.Y):
			return fail(bourse.EInvalidCurve, op, at()+".y", "decreasing: y %s after %s", p.Y, prev.Y)
		}
	}
	return nil
}

// Equal reports whether c and d have the same breakpoints by value (1.5
// equals 1.50; an empty curve equals a nil one).
func (c Curve) Equal(d Curve) bool {
	if len(c) != len(d) {
		return false
	}
	for i := range c {
		if !c[i].X.Equal(d[i].X) || !c[i].Y.Equal(d[i].Y) {
			return false
		}
	}
	return true
}
