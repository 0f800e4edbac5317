package contract

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func BenchmarkCharge(b *testing.B) {
	terms := gpuTerms(8, time.Hour, Ramp(d("0.5"), d("8"), d("0.01")), pts("0", "0", "1", "0.001", "8", "0.004"), "300")
	use := Usage{U: d("10000.123456"), T: 1789*time.Second + 123456789, S: d("3.5")}
	for b.Loop() {
		if _, err := Charge(terms, use, 2); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEval evaluates a curve of MaxPoints points between breakpoints.
func BenchmarkEval(b *testing.B) {
	c := make(Curve, MaxPoints)
	for i := range c {
		c[i] = Point{X: decimal.New(int64(i)*125, -2), Y: decimal.New(int64(i*i), -3)}
	}
	x := d("33.3")
	for b.Loop() {
		c.Eval(x)
	}
}
