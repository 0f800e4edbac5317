package contract

import (
	"math/big"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
)

// wide is a scenario whose numbers are sometimes too large for fixed
// numbers (18 digits, 18 places, long time limits, many GPUs), so that
// both paths of due and Covers are taken.
type wide struct {
	Terms   Terms
	Scale   int32
	Use     Usage
	Reserve Curve
}

func (wide) Generate(r *rand.Rand, size int) reflect.Value {
	s := scenario{}.Generate(r, size).Interface().(scenario)
	w := wide{Terms: s.Terms, Scale: s.Scale, Use: s.Use, Reserve: randCurve(r, 4)}
	big := func(d decimal.Decimal) decimal.Decimal {
		switch r.Intn(6) {
		case 0: // many digits, many places
			return d.Add(decimal.New(r.Int63(), -int32(r.Intn(19))))
		case 1: // an exponent far from the others'
			return d.Mul(decimal.New(1, int32(r.Intn(13)-6)))
		}
		return d
	}
	bigCurve := func(c Curve) Curve {
		out := make(Curve, len(c))
		for i, p := range c {
			out[i] = Point{X: big(p.X), Y: big(p.Y)}
		}
		return out
	}
	if r.Intn(2) == 0 {
		w.Terms.P, w.Terms.Q, w.Reserve = bigCurve(w.Terms.P), bigCurve(w.Terms.Q), bigCurve(w.Reserve)
		w.Use.U, w.Use.S = big(w.Use.U), big(w.Use.S)
	}
	if r.Intn(4) == 0 {
		w.Terms.GPUs = 1 + r.Intn(MaxGPUs)
		w.Terms.TimeLimit = time.Duration(1 + r.Int63n(int64(MaxTimeLimit)))
		w.Use.T = time.Duration(r.Int63n(int64(w.Terms.TimeLimit) + 1))
	}
	w.Scale = int32(r.Intn(MaxPlaces + 1))
	return reflect.ValueOf(w)
}

// TestFixedIsDecimal: where the fixed-number path of due, MaxCharge and
// Covers answers, it answers what the decimal path does, to the
// representation; and it answers for the ordinary offers of the other
// property tests often enough to compare.
func TestFixedIsDecimal(t *testing.T) {
	var fixedDues, fixedCovers, n int
	f := func(w wide) bool {
		n++
		ok := true
		u, err := clamp("test", w.Terms, w.Use)
		if err != nil {
			return true
		}
		if U, ok1 := fix(u.U); ok1 && u.T > 0 {
			if S, ok2 := fix(u.S); ok2 {
				if got, ok3 := fixedDue(w.Terms, U, u.T, S, w.Scale); ok3 {
					fixedDues++
					if want := dueDecimal(w.Terms, u, w.Scale); !reflect.DeepEqual(got, want) {
						t.Errorf("due(%+v, %+v, %d) = %s fixed, %s decimal", w.Terms, u, w.Scale, got, want)
						ok = false
					}
				}
			}
		}
		g := decimal.NewFromInt(int64(w.Terms.GPUs))
		if got, want := MaxCharge(w.Terms, w.Scale), dueDecimal(w.Terms, Usage{U: g.Mul(seconds(w.Terms.TimeLimit)), T: w.Terms.TimeLimit, S: g}, w.Scale); !reflect.DeepEqual(got, want) {
			t.Errorf("MaxCharge(%+v, %d) = %s, %s decimal", w.Terms, w.Scale, got, want)
			ok = false
		}
		for _, x := range append([]decimal.Decimal{decimal.Zero, g, u.S, u.U}, w.Reserve.xs()...) {
			fx, ok1 := fix(x)
			if !ok1 {
				continue
			}
			for _, below := range []bool{false, true} {
				got, ok2 := fixedPriceCmp(w.Terms.P, w.Reserve, fx, below)
				if !ok2 {
					continue
				}
				fixedCovers++
				at := Curve.At
				if below {
					at = Curve.below
				}
				if want := at(w.Terms.P, x).Cmp(at(w.Reserve, x)); got != want {
					t.Errorf("compare %v with %v at %s (below %v) = %d fixed, %d decimal", w.Terms.P, w.Reserve, x, below, got, want)
					ok = false
				}
			}
		}
		return ok
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000, Rand: rand.New(rand.NewSource(1))}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d cases: %d dues and %d comparisons on fixed numbers", n, fixedDues, fixedCovers)
	// The generator's numbers are long on purpose (the simulator's market
	// prices 99% of its dues on fixed numbers); enough must still go the
	// fixed way for the comparison to mean something.
	if fixedDues < n/10 || fixedCovers < n {
		t.Errorf("the fixed path answered too rarely: %d dues, %d comparisons in %d cases", fixedDues, fixedCovers, n)
	}
}

// TestFixedArithmetic: a table of edges of the 128-bit arithmetic.
func TestFixedArithmetic(t *testing.T) {
	max := u128{^uint64(0), ^uint64(0)}
	if _, ok := mul128(max, u128{lo: 2}); ok {
		t.Error("2·(2^128−1) did not overflow")
	}
	if got, ok := mul128(u128{lo: 1 << 63}, u128{lo: 4}); !ok || got != (u128{hi: 2}) {
		t.Errorf("2^63·4 = %v, %v", got, ok)
	}
	if len(pow10s) != 39 {
		t.Errorf("%d powers of ten below 2^128; want 39", len(pow10s))
	}
	a, b := fixed{c: u128{lo: 15}, e: -1}, fixed{c: u128{lo: 2}, e: 0}
	if got, ok := a.sub(b); ok {
		t.Errorf("1.5 − 2 = %v; want no answer", got)
	}
	if got, ok := a.quo(b, 2); !ok || got.String() != "0.75" || got.Exponent() != -2 {
		t.Errorf("1.5/2 at 2 places = %v, %v", got, ok)
	}
	if got, ok := (fixed{c: u128{lo: 1}, e: -30}).quo(fixed{c: u128{lo: 3}}, 2); ok {
		t.Errorf("1e-30/3 at 2 places = %v; want no answer (3e28 has more than 64 bits)", got)
	}
	if got, ok := (fixed{c: u128{lo: 1}, e: -1}).quo(fixed{c: u128{lo: 3}}, 0); ok {
		t.Errorf("0.1/3 at 0 places = %v; want no answer (a zero is the decimal path's)", got)
	}
	if _, ok := (fixed{c: u128{lo: 1}, e: 40}).add(fixed{c: u128{lo: 1}}); ok {
		t.Error("1e40 + 1 fit in 128 bits")
	}
}

// TestDiv128: quotients of random 128-bit numbers, of every length, as
// math/big computes them.
func TestDiv128(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	word := func() uint64 { return r.Uint64() >> r.Intn(64) }
	toBig := func(a u128) *big.Int {
		return new(big.Int).Or(new(big.Int).Lsh(new(big.Int).SetUint64(a.hi), 64), new(big.Int).SetUint64(a.lo))
	}
	for range 100000 {
		n, d := u128{word(), word()}, u128{word(), word()}
		if r.Intn(2) == 0 {
			d.hi = 0
		}
		if d.isZero() {
			continue
		}
		q, ok := div128(n, d)
		want := new(big.Int).Quo(toBig(n), toBig(d))
		if ok != want.IsUint64() || (ok && q != want.Uint64()) {
			t.Fatalf("%v / %v = %d, %v; want %s", toBig(n), toBig(d), q, ok, want)
		}
	}
}

// TestBelowMax: counting digits says what comparing with 10^18 does.
func TestBelowMax(t *testing.T) {
	limit := decimal.New(1, MaxIntDigits)
	r := rand.New(rand.NewSource(1))
	cases := []decimal.Decimal{decimal.Zero, decimal.New(0, 30), decimal.New(1, 18), decimal.New(-1, 18),
		decimal.New(999999999999999999, 0), decimal.New(-999999999999999999, 0), decimal.RequireFromString("999999999999999999.9"), decimal.RequireFromString("-12345678901234567890123"),
		decimal.New(1, 17), decimal.New(10, 17), decimal.New(1, -64), decimal.RequireFromString("999999999999999999.999999999999999999999")}
	for range 10000 {
		a, b := r.Int63()>>r.Intn(63), r.Int63()>>r.Intn(63)
		cases = append(cases, decimal.New(a-b, int32(r.Intn(41)-20)))
	}
	for _, d := range cases {
		if got, want := belowMax(d), d.Abs().Cmp(limit) < 0; got != want {
			t.Errorf("belowMax(%s) = %v; |d| < 10^18 is %v", d, got, want)
		}
	}
}

// TestClampFixed: where clampFixed answers, clamp's decimal bounds answer
// the same, to the representation.
func TestClampFixed(t *testing.T) {
	f := func(w wide) bool {
		T := min(w.Use.T, w.Terms.TimeLimit)
		got, ok := clampFixed(w.Terms.GPUs, w.Use, T)
		if !ok {
			return true
		}
		g := decimal.NewFromInt(int64(w.Terms.GPUs))
		want := Usage{U: decimal.Min(w.Use.U, g.Mul(seconds(T))).Truncate(MaxPlaces), T: T, S: decimal.Min(w.Use.S, g).Truncate(MaxPlaces)}
		return reflect.DeepEqual(got, want)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000, Rand: rand.New(rand.NewSource(1))}); err != nil {
		t.Fatal(err)
	}
}

// xs are the curve's breakpoints' x.
func (c Curve) xs() []decimal.Decimal {
	out := make([]decimal.Decimal, len(c))
	for i, p := range c {
		out[i] = p.X
	}
	return out
}
