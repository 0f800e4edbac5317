package contract

import (
	"math/big"
	"testing"

	"github.com/shopspring/decimal"
)

// FuzzAppendDecimal holds the fast formatter to decimal's own String and
// to formatDecimal, on both sides of the 18-digit line.
func FuzzAppendDecimal(f *testing.F) {
	for _, s := range []struct {
		c   int64
		exp int32
	}{{0, 0}, {0, -2}, {0, 3}, {60, -2}, {-60, -2}, {5, -1}, {-10, -1}, {15, 2}, {1, -20}, {123456789012345678, -9},
		{999999999999999999, 0}, {1000000000000000000, -3}, {-999999999999999999, -18}, {7, 40}} {
		f.Add(s.c, s.exp, uint8(0))
	}
	f.Fuzz(func(t *testing.T, c int64, exp int32, scale uint8) {
		exp %= 60
		v := big.NewInt(c)
		v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale%4)), nil)) // past 18 digits too
		d := decimal.NewFromBigInt(v, exp)
		if got, want := string(AppendDecimal([]byte("x"), d)), "x"+d.String(); got != want {
			t.Fatalf("AppendDecimal(%s e%d) = %q, want %q", v, exp, got, want)
		}
		if got, want := string(appendFixed(nil, d)), formatDecimal(d); got != want {
			t.Fatalf("appendFixed(%s e%d) = %q, want %q", v, exp, got, want)
		}
	})
}

func BenchmarkAppendDecimal(b *testing.B) {
	d := decimal.RequireFromString("1234.5600")
	b.Run("String", func(b *testing.B) {
		for b.Loop() {
			_ = d.String()
		}
	})
	buf := make([]byte, 0, 32)
	b.Run("AppendDecimal", func(b *testing.B) {
		for b.Loop() {
			buf = AppendDecimal(buf[:0], d)
		}
	})
}
