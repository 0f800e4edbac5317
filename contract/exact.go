package contract

import (
	"math"
	"math/bits"
	"sort"
	"time"

	"github.com/shopspring/decimal"
)

// The pricing formulas multiply a handful of decimals and divide once.
// With shopspring/decimal every step allocates big integers, and a
// simulation prices millions of offers, so the same arithmetic is done
// first on fixed: a non-negative decimal with a 128-bit coefficient. Every
// step is exact or reports that it would overflow, and then the caller
// takes the decimal path, so the answer is the same either way (the
// property tests compare the two).

// fixed is c·10^e, c < 2^128.
type fixed struct {
	c u128
	e int32
}

type u128 struct{ hi, lo uint64 }

// fix converts a non-negative decimal whose coefficient fits an int64.
func fix(d decimal.Decimal) (fixed, bool) {
	if d.Sign() < 0 || d.NumDigits() > 19 {
		return fixed{}, false
	}
	c := d.CoefficientInt64()
	if c < 0 { // 19 digits, more than an int64 holds
		return fixed{}, false
	}
	return fixed{c: u128{lo: uint64(c)}, e: d.Exponent()}, true
}

func fixInt(n int64) fixed { return fixed{c: u128{lo: uint64(n)}} }

// fixSeconds is d in seconds, exactly (seconds).
func fixSeconds(d time.Duration) fixed { return fixed{c: u128{lo: uint64(d)}, e: -9} }

func (a u128) isZero() bool { return a.hi == 0 && a.lo == 0 }

func (a u128) cmp(b u128) int {
	switch {
	case a.hi != b.hi:
		if a.hi < b.hi {
			return -1
		}
		return 1
	case a.lo != b.lo:
		if a.lo < b.lo {
			return -1
		}
		return 1
	}
	return 0
}

func mul128(a, b u128) (u128, bool) {
	if a.hi != 0 && b.hi != 0 {
		return u128{}, false
	}
	hi, lo := bits.Mul64(a.lo, b.lo)
	h1, c1 := bits.Mul64(a.hi, b.lo)
	h2, c2 := bits.Mul64(a.lo, b.hi)
	if h1 != 0 || h2 != 0 {
		return u128{}, false
	}
	hi, carry := bits.Add64(hi, c1, 0)
	if carry != 0 {
		return u128{}, false
	}
	hi, carry = bits.Add64(hi, c2, 0)
	return u128{hi, lo}, carry == 0
}

// pow10s[k] is 10^k, up to the largest power below 2^128.
var pow10s = func() []u128 {
	p := []u128{{lo: 1}}
	for {
		next, ok := mul128(p[len(p)-1], u128{lo: 10})
		if !ok {
			return p
		}
		p = append(p, next)
	}
}()

// scaleUp is a·10^k.
func scaleUp(a u128, k int64) (u128, bool) {
	if a.isZero() {
		return a, true
	}
	if k < 0 || k >= int64(len(pow10s)) {
		return u128{}, false
	}
	return mul128(a, pow10s[k])
}

func (a fixed) mul(b fixed) (fixed, bool) {
	e := int64(a.e) + int64(b.e)
	c, ok := mul128(a.c, b.c)
	if !ok || e > math.MaxInt32 || e < math.MinInt32 {
		return fixed{}, false
	}
	return fixed{c, int32(e)}, true
}

// align returns a's and b's coefficients at the smaller exponent of the
// two, and that exponent.
func align(a, b fixed) (x, y u128, e int32, ok bool) {
	switch {
	case a.e > b.e:
		x, ok = scaleUp(a.c, int64(a.e)-int64(b.e))
		return x, b.c, b.e, ok
	case a.e < b.e:
		y, ok = scaleUp(b.c, int64(b.e)-int64(a.e))
		return a.c, y, a.e, ok
	}
	return a.c, b.c, a.e, true
}

func (a fixed) add(b fixed) (fixed, bool) {
	x, y, e, ok := align(a, b)
	if !ok {
		return fixed{}, false
	}
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, carry := bits.Add64(x.hi, y.hi, carry)
	return fixed{u128{hi, lo}, e}, ok && carry == 0
}

// sub is a − b, which must not be negative.
func (a fixed) sub(b fixed) (fixed, bool) {
	x, y, e, ok := align(a, b)
	if !ok || x.cmp(y) < 0 {
		return fixed{}, false
	}
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(x.hi, y.hi, borrow)
	return fixed{u128{hi, lo}, e}, true
}

func (a fixed) cmp(b fixed) (int, bool) {
	switch {
	case a.c.isZero() || b.c.isZero():
		return a.c.cmp(b.c), true
	}
	x, y, _, ok := align(a, b)
	return x.cmp(y), ok
}

// quo is a/b truncated toward zero to places decimal places, as
// Decimal.QuoRem's quotient: the same value, at exponent −places.
func (a fixed) quo(b fixed, places int32) (decimal.Decimal, bool) {
	n, d := a.c, b.c
	var ok bool
	if k := int64(a.e) - int64(b.e) + int64(places); k >= 0 {
		n, ok = scaleUp(n, k)
	} else {
		d, ok = scaleUp(d, -k)
	}
	if !ok || d.isZero() {
		return decimal.Decimal{}, false
	}
	q, ok := div128(n, d)
	if !ok || q == 0 || q > math.MaxInt64 {
		// A zero quotient goes the decimal way too: math/big represents
		// it sometimes with a nil slice of words, sometimes an empty one,
		// and reflect.DeepEqual tells them apart.
		return decimal.Decimal{}, false
	}
	return decimal.New(int64(q), -places), true
}

// div128 is ⌊n/d⌋ for d > 0, if it fits 64 bits. For a divisor of more
// than 64 bits it takes a trial quotient from its top word, within one of
// the true one, and corrects it (Hacker's Delight, 9-5).
func div128(n, d u128) (uint64, bool) {
	if d.hi == 0 {
		if n.hi >= d.lo {
			return 0, false
		}
		q, _ := bits.Div64(n.hi, n.lo, d.lo)
		return q, true
	}
	s := uint(bits.LeadingZeros64(d.hi))
	top := d.hi<<s | d.lo>>(64-s)
	q, _ := bits.Div64(n.hi>>1, n.lo>>1|n.hi<<63, top)
	q >>= 63 - s
	if q != 0 {
		q--
	}
	// n − q·d cannot overflow: q·d ≤ n.
	ph, pl := bits.Mul64(d.lo, q)
	ph += d.hi * q
	lo, borrow := bits.Sub64(n.lo, pl, 0)
	hi, _ := bits.Sub64(n.hi, ph, borrow)
	if (u128{hi, lo}).cmp(d) >= 0 {
		q++
	}
	return q, true
}

// fixedAt is Curve.at on fixed numbers.
func (c Curve) fixedAt(n, d fixed) (num, den fixed, ok bool) {
	// i counts the breakpoints at or left of n/d, found as Curve.at finds
	// it, so that an unsorted curve gives the same answer too.
	bad := false
	i := sort.Search(len(c), func(i int) bool {
		x, ok := fix(c[i].X)
		xd, ok2 := x.mul(d)
		cmp, ok3 := xd.cmp(n)
		bad = bad || !ok || !ok2 || !ok3
		return cmp > 0
	})
	if bad {
		return fixed{}, fixed{}, false
	}
	one := fixInt(1)
	switch {
	case i == 0:
		return fixed{}, one, true
	case i == len(c):
		y, ok := fix(c[i-1].Y)
		return y, one, ok
	}
	ax, ok1 := fix(c[i-1].X)
	ay, ok2 := fix(c[i-1].Y)
	bx, ok3 := fix(c[i].X)
	by, ok4 := fix(c[i].Y)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return fixed{}, fixed{}, false
	}
	dx, ok := bx.sub(ax)
	if !ok || dx.c.isZero() { // an invalid, unsorted curve: the decimal path
		return fixed{}, fixed{}, false
	}
	// a.Y + (b.Y−a.Y)·(n/d − a.X)/dx, over the common denominator d·dx.
	dy, ok := by.sub(ay)
	if !ok {
		return fixed{}, fixed{}, false
	}
	axd, ok1 := ax.mul(d)
	off, ok2 := n.sub(axd)
	left, ok3 := ay.mul(d)
	left, ok4 = left.mul(dx)
	right, ok5 := dy.mul(off)
	num, ok6 := left.add(right)
	den, ok7 := d.mul(dx)
	return num, den, ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7
}

// fixedDue is due on fixed numbers: u, s and t are the clamped usage.
func fixedDue(t Terms, u fixed, tt time.Duration, s fixed, scale int32) (decimal.Decimal, bool) {
	T := fixSeconds(tt)
	pn, pd, ok := t.P.fixedAt(u, T)
	if !ok {
		return decimal.Decimal{}, false
	}
	qn, qd, ok := t.Q.fixedAt(s, fixInt(1))
	if !ok {
		return decimal.Decimal{}, false
	}
	a, ok1 := u.mul(pn)
	a, ok2 := a.mul(qd)
	b, ok3 := T.mul(qn)
	b, ok4 := b.mul(pd)
	num, ok5 := a.add(b)
	den, ok6 := pd.mul(qd)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		return decimal.Decimal{}, false
	}
	return num.quo(den, scale)
}

// fixedPriceCmp compares c(x) with r(x), or their limits from the left
// when below is set, as Covers does with At and below.
func fixedPriceCmp(c, r Curve, x fixed, below bool) (int, bool) {
	at := func(k Curve) (num, den fixed, ok bool) {
		if below {
			if len(k) == 0 {
				return fixed{}, fixInt(1), true
			}
			x0, ok := fix(k[0].X)
			if !ok {
				return fixed{}, fixed{}, false
			}
			if le, ok := x.cmp(x0); !ok {
				return fixed{}, fixed{}, false
			} else if le <= 0 {
				return fixed{}, fixInt(1), true
			}
		}
		return k.fixedAt(x, fixInt(1))
	}
	cn, cd, ok1 := at(c)
	rn, rd, ok2 := at(r)
	if !ok1 || !ok2 {
		return 0, false
	}
	left, ok1 := cn.mul(rd)
	right, ok2 := rn.mul(cd)
	if !ok1 || !ok2 {
		return 0, false
	}
	return left.cmp(right)
}
