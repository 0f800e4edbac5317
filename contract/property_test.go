package contract

import (
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
)

// scenario is a random valid offer, a feasible reading of it (U ≤ g·T,
// T ≤ L, S ≤ g) and a larger reading (more U, more S, same T).
type scenario struct {
	Terms     Terms
	Scale     int32
	Use, More Usage
}

// Generate implements quick.Generator.
func (scenario) Generate(r *rand.Rand, _ int) reflect.Value {
	s := scenario{Scale: int32(r.Intn(5))}
	g := 1 + r.Intn(8)
	l := time.Duration(1+r.Int63n(int64(2*time.Hour/time.Millisecond))) * time.Millisecond
	s.Terms = Terms{Client: "c", Currency: "GPU", GPUs: g, TimeLimit: l,
		P: randCurve(r, 8), Q: randCurve(r, 4)}
	// A prepayment up to the maximum, so both capped and uncapped charges come up.
	max := MaxCharge(s.Terms, s.Scale)
	s.Terms.Prepayment = max.Mul(randFraction(r, 1, 4)).Truncate(s.Scale)

	gd := decimal.NewFromInt(int64(g))
	t := time.Duration(r.Int63n(int64(l) + 1))
	if r.Intn(8) == 0 {
		t = l // the edges are where bugs live
	}
	gt := gd.Mul(seconds(t))
	s.Use = Usage{U: gt.Mul(randFraction(r, 1, 6)), T: t, S: gd.Mul(randFraction(r, 1, 3))}
	s.More = Usage{
		U: decimal.Min(gt, s.Use.U.Add(gt.Mul(randFraction(r, 1, 6)))),
		T: t,
		S: decimal.Min(gd, s.Use.S.Add(gd.Mul(randFraction(r, 1, 3)))),
	}
	return reflect.ValueOf(s)
}

// randCurve is a valid curve of up to n points with coordinates of up to 4
// places, sometimes with x0 > 0 or a jump at x0.
func randCurve(r *rand.Rand, n int) Curve {
	c := make(Curve, r.Intn(n+1))
	x, y := decimal.New(r.Int63n(3)*r.Int63n(10000), -4), decimal.New(r.Int63n(2)*r.Int63n(100), -4)
	for i := range c {
		c[i] = Point{X: x, Y: y}
		x = x.Add(decimal.New(1+r.Int63n(30000), -4))
		y = y.Add(decimal.New(r.Int63n(3)*r.Int63n(1000), -4))
	}
	return c
}

// randFraction is a random decimal in [0, max] with the given places,
// often exactly 0 or max.
func randFraction(r *rand.Rand, max int64, places int32) decimal.Decimal {
	unit := int64(1)
	for range places {
		unit *= 10
	}
	switch r.Intn(8) {
	case 0:
		return decimal.Zero
	case 1:
		return decimal.NewFromInt(max)
	}
	return decimal.New(r.Int63n(max*unit+1), -places)
}

var quickConfig = &quick.Config{MaxCount: 3000, Rand: rand.New(rand.NewSource(1))}

// TestChargeProperties checks, for random valid offers and feasible usage,
// the promises of Charge: 0 ≤ charge ≤ prepayment, charge + refund =
// prepayment exactly, the charge at the currency's scale, and no charge above
// MaxCharge, even uncapped.
func TestChargeProperties(t *testing.T) {
	f := func(s scenario) bool {
		if err := Validate(s.Terms, func(string) (int32, bool) { return s.Scale, true }); err != nil && s.Terms.Prepayment.Sign() > 0 {
			t.Errorf("generated invalid terms: %v", err)
			return false
		}
		st, err := Charge(s.Terms, s.Use, s.Scale)
		if err != nil {
			t.Errorf("Charge: %v", err)
			return false
		}
		due, _ := Due(s.Terms, s.Use, s.Scale)
		max := MaxCharge(s.Terms, s.Scale)
		switch {
		case st.Charge.Sign() < 0, st.Refund.Sign() < 0:
			t.Errorf("negative: charge %s, refund %s", st.Charge, st.Refund)
		case st.Charge.GreaterThan(s.Terms.Prepayment):
			t.Errorf("charge %s above prepayment %s", st.Charge, s.Terms.Prepayment)
		case !st.Charge.Add(st.Refund).Equal(s.Terms.Prepayment):
			t.Errorf("charge %s + refund %s ≠ prepayment %s", st.Charge, st.Refund, s.Terms.Prepayment)
		case !hasPlaces(st.Charge, s.Scale) || !hasPlaces(st.Refund, s.Scale):
			t.Errorf("charge %s or refund %s finer than scale %d", st.Charge, st.Refund, s.Scale)
		case due.GreaterThan(max):
			t.Errorf("due %s above MaxCharge %s", due, max)
		case st.Exhausted != due.GreaterThanOrEqual(s.Terms.Prepayment):
			t.Errorf("exhausted %v with due %s and prepayment %s", st.Exhausted, due, s.Terms.Prepayment)
		default:
			return true
		}
		return false
	}
	if err := quick.Check(f, quickConfig); err != nil {
		t.Error(err)
	}
}

// TestChargeMonotone checks that more work (U) or more share (S) in the same
// wall time never costs less.
func TestChargeMonotone(t *testing.T) {
	f := func(s scenario) bool {
		less, err1 := Due(s.Terms, s.Use, s.Scale)
		more, err2 := Due(s.Terms, s.More, s.Scale)
		onlyU, err3 := Due(s.Terms, Usage{U: s.More.U, T: s.Use.T, S: s.Use.S}, s.Scale)
		if err1 != nil || err2 != nil || err3 != nil {
			t.Errorf("Due: %v %v %v", err1, err2, err3)
			return false
		}
		if less.GreaterThan(onlyU) || onlyU.GreaterThan(more) {
			t.Errorf("not monotone: %s at %v, %s with more U, %s with more U and S", less, s.Use, onlyU, more)
			return false
		}
		return true
	}
	if err := quick.Check(f, quickConfig); err != nil {
		t.Error(err)
	}
}

// TestChargeZero checks that an idle job without a Q term costs nothing,
// and that no time costs nothing at all.
func TestChargeZero(t *testing.T) {
	f := func(s scenario) bool {
		s.Terms.Q = nil
		idle, err := Due(s.Terms, Usage{T: s.Use.T, S: s.Use.S}, s.Scale)
		if err != nil || !idle.IsZero() {
			t.Errorf("idle without Q: %s, %v", idle, err)
			return false
		}
		return true
	}
	g := func(s scenario) bool {
		none, err := Due(s.Terms, Usage{U: s.Use.U, S: s.Use.S}, s.Scale)
		if err != nil || !none.IsZero() {
			t.Errorf("T = 0: %s, %v", none, err)
			return false
		}
		return true
	}
	if err := quick.Check(f, quickConfig); err != nil {
		t.Error(err)
	}
	if err := quick.Check(g, quickConfig); err != nil {
		t.Error(err)
	}
}

// TestEvalMonotone checks that Eval never decreases along x and stays
// within [0, yn] on random valid curves.
func TestEvalMonotone(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for range 2000 {
		c := randCurve(r, 8)
		if err := c.Validate(); err != nil {
			t.Fatalf("generated invalid curve %v: %v", c, err)
		}
		prev := decimal.Zero
		for x := decimal.Zero; x.LessThan(decimal.NewFromInt(30)); x = x.Add(decimal.New(1+r.Int63n(5000), -4)) {
			y := c.Eval(x)
			if y.LessThan(prev) || y.Sign() < 0 || (len(c) > 0 && y.GreaterThan(c[len(c)-1].Y)) {
				t.Fatalf("curve %v: Eval(%s) = %s after %s", c, x, y, prev)
			}
			prev = y
		}
	}
}
