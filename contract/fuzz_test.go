package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/shopspring/decimal"
)

func FuzzParseTerms(f *testing.F) {
	f.Add([]byte(fullJSON))
	f.Add([]byte(fullCanonical))
	f.Add([]byte(offerWith("", "")))
	f.Add([]byte(offerWith("q", `[["0","0"],["1.5","2.25"]]`)))
	f.Add([]byte(offerWith("job", `{"env":{"A":"1"},"profile":{"utilization":"0.5","duration":"1h2m3.5s"}}`)))
	f.Add([]byte(offerWith("job", `{"image":"ghcr.io/acme/train:v1","args":["-x"]}`)))
	f.Add([]byte(offerWith("job", `{"command":"python3","files":{"digest":"sha256:`+strings.Repeat("ab", 32)+`","bytes":10240}}`)))
	f.Add([]byte(offerWith("prepayment", `"-0.000"`)))
	f.Add([]byte(offerWith("time_limit", `"-2562047h47m16.854775808s"`)))
	f.Add([]byte(`{"client":"\u00e9\ud800","class":{},"job":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		terms, err := ParseTerms(data)
		if err != nil {
			var e *bourse.Error
			if !errors.As(err, &e) || e.Code != bourse.EInvalid {
				t.Fatalf("error is not an EInvalid *bourse.Error: %#v", err)
			}
			return
		}
		out, err := json.Marshal(terms)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := ParseTerms(out)
		if err != nil {
			t.Fatalf("parsing %s, marshalled from %q: %v", out, data, err)
		}
		if !back.Equal(terms) {
			t.Fatalf("round trip changed the terms:\n%+v\n%+v", terms, back)
		}
		again, _ := json.Marshal(back)
		if !bytes.Equal(out, again) {
			t.Fatalf("marshal is not stable:\n%s\n%s", out, again)
		}
		// Validate must judge any parsed terms without panicking.
		_ = Validate(terms, scales)
	})
}

// fuzzCurve reads a curve from bytes, two per point: signed steps of x and
// y in hundredths from (0, 0). Most byte strings make valid curves; negative
// steps make unsorted, duplicate, decreasing or negative ones.
func fuzzCurve(b []byte) Curve {
	var c Curve
	x, y := int64(0), int64(0)
	for i := 0; i+1 < len(b); i += 2 {
		x += int64(int8(b[i]))
		y += int64(int8(b[i+1]))
		c = append(c, Point{X: decimal.New(x, -2), Y: decimal.New(y, -2)})
	}
	return c
}

func FuzzCharge(f *testing.F) {
	f.Add([]byte{0, 1}, []byte{}, uint16(4), int64(480e9), int64(480e9), int64(1920e3), int64(0), int64(1920), uint8(2))
	f.Add([]byte{10, 0, 20, 50}, []byte{0, 0, 100, 3}, uint16(2), int64(600e9), int64(1e9), int64(3e3), int64(1500), int64(1), uint8(0))
	f.Add([]byte{0, 0, 0, 1}, []byte{1, 255}, uint16(1), int64(1e9), int64(-1), int64(-1), int64(-1), int64(-5), uint8(19))
	f.Fuzz(func(t *testing.T, p, q []byte, g uint16, limit, wall, u, s, prepayment int64, scale uint8) {
		terms := Terms{
			GPUs:       int(g % (MaxGPUs + 2)),
			TimeLimit:  time.Duration(limit),
			P:          fuzzCurve(p),
			Q:          fuzzCurve(q),
			Prepayment: decimal.New(prepayment, -int32(scale%4)),
		}
		use := Usage{U: decimal.New(u, -3), T: time.Duration(wall), S: decimal.New(s, -3)}
		sc := int32(scale % (MaxPlaces + 3))
		st, err := Charge(terms, use, sc)
		if err != nil {
			if bourse.ErrorCode(err) == bourse.EInternal {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		max := MaxCharge(terms, sc)
		due, _ := Due(terms, use, sc)
		switch {
		case st.Charge.Sign() < 0:
			t.Fatalf("negative charge %s", st.Charge)
		case st.Charge.GreaterThan(terms.Prepayment):
			t.Fatalf("charge %s above prepayment %s", st.Charge, terms.Prepayment)
		case !st.Charge.Add(st.Refund).Equal(terms.Prepayment):
			t.Fatalf("charge %s + refund %s ≠ prepayment %s", st.Charge, st.Refund, terms.Prepayment)
		case due.GreaterThan(max):
			t.Fatalf("due %s above MaxCharge %s", due, max)
		case !hasPlaces(due, sc):
			t.Fatalf("due %s finer than scale %d", due, sc)
		}
	})
}

func FuzzEval(f *testing.F) {
	f.Add([]byte{0, 1}, int64(5), int64(7))
	f.Add([]byte{100, 0, 50, 100}, int64(120), int64(1))
	f.Add([]byte{0, 0, 3, 1, 255, 2}, int64(2), int64(-3))
	f.Fuzz(func(t *testing.T, b []byte, x, dx int64) {
		c := fuzzCurve(b)
		lo, hi := decimal.New(x, -2), decimal.New(x, -2).Add(decimal.New(dx, -4).Abs())
		ylo, yhi := c.Eval(lo), c.Eval(hi) // no panic, valid curve or not
		if c.Validate() != nil {
			return
		}
		top := decimal.Zero
		if len(c) > 0 {
			top = c[len(c)-1].Y
		}
		if ylo.Sign() < 0 || yhi.GreaterThan(top) || ylo.GreaterThan(yhi) {
			t.Fatalf("curve %v: Eval(%s) = %s, Eval(%s) = %s, top %s", c, lo, ylo, hi, yhi, top)
		}
		// The exact fraction behind Eval agrees with it to 30 places.
		num, den := c.at(lo, one)
		if diff := num.Sub(ylo.Mul(den)).Abs(); diff.GreaterThan(den.Mul(decimal.New(5, -31))) {
			t.Fatalf("Eval(%s) = %s, exact %s/%s", lo, ylo, num, den)
		}
	})
}

// FuzzStrict holds the byte scanner of checkStrict to the token walker it
// replaced: the same inputs refused, with the same field named.
func FuzzStrict(f *testing.F) {
	for _, s := range []string{
		`{"client":"a","gpus":2,"p":[["0","1"]],"job":{"env":{"A":"1","A":"2"}}}`,
		`{"client":"a","client":"b"}`, `{"Client":"a"}`, `{"\u0063lient":"a"}`, `{"gpus":null}`,
		`{"p":[[[[[[[[1]]]]]]]]}`, `{} {}`, `[]`, `"x"`, `nul`, `{"a":tru}`, `{"gpus":-0.5e+3}`,
		`{"gpus":01}`, `{"job":{"env":{"\xff":"1","\xfe":"2"}}}`, ` {"server" : "x" } `, `{"p":[1,]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, want := checkStrict("op", data), checkStrictOracle("op", data)
		if (got == nil) != (want == nil) {
			t.Fatalf("%q: scanner says %v, walker says %v", data, got, want)
		}
		if got != nil {
			g, w := got.(*bourse.Error), want.(*bourse.Error)
			if g.Field != w.Field {
				t.Fatalf("%q: scanner names %q (%v), walker %q (%v)", data, g.Field, got, w.Field, want)
			}
		}
	})
}
