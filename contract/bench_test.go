package contract

import (
	"github.com/bourse/bourse/internal/dectest"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func BenchmarkCharge(b *testing.B) {
	terms := gpuTerms(8, time.Hour, Ramp(dectest.D("0.5"), dectest.D("8"), dectest.D("0.01")), pts("0", "0", "1", "0.001", "8", "0.004"), "300")
	use := Usage{U: dectest.D("10000.123456"), T: 1789*time.Second + 123456789, S: dectest.D("3.5")}
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
	x := dectest.D("33.3")
	for b.Loop() {
		c.Eval(x)
	}
}

// BenchmarkParseTerms and BenchmarkMarshalTerms run the way before the
// byte walks too (decode_oracle_test.go), for the ratio.
func BenchmarkParseTerms(b *testing.B) {
	data := []byte(fullCanonical)
	b.Run("walk", func(b *testing.B) {
		for b.Loop() {
			if _, err := ParseTerms(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) { // the way before decodeWire, for the ratio
		for b.Loop() {
			if err := checkStrict("op", data); err != nil {
				b.Fatal(err)
			}
			w, err := decodeWireOracle(data)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := w.terms("op"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMarshalTerms(b *testing.B) {
	terms := fullTerms()
	b.Run("append", func(b *testing.B) {
		for b.Loop() {
			_, _ = terms.MarshalJSON()
		}
	})
	b.Run("encoding-json", func(b *testing.B) { // the way before appendJSON, for the ratio
		for b.Loop() {
			_, _ = marshalOracle(terms)
		}
	})
}
