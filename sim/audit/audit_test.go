package audit

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

func rat(s string) *big.Rat {
	r, err := parseDecimal(s)
	if err != nil {
		panic(err)
	}
	return r
}

func flat(p string) curve { return curve{{rat("0"), rat(p)}} }

// TestSettleByHand: docs/pricing.md's worked examples, each computed by
// hand on the page.
func TestSettleByHand(t *testing.T) {
	for _, tc := range []struct {
		name           string
		t              terms
		u, T, s        string
		charge, refund string
	}{
		{"1239 GPU-s at 0.001: 1.239 truncated to 1.23", terms{gpus: 1, limit: rat("7200"), prepayment: rat("5"), p: flat("0.001"), scale: 2},
			"1239", "1239", "1", "1.23", "3.77"},
		{"P = (0,0),(3,2) at r = 1: 0.666… truncated to 0.66", terms{gpus: 1, limit: rat("60"), prepayment: rat("1"), p: curve{{rat("0"), rat("0")}, {rat("3"), rat("2")}}, scale: 2},
			"1", "1", "1", "0.66", "0.34"},
		{"seed 000: 4 GPUs for 8 minutes at 0.01", terms{gpus: 4, limit: rat("3600"), prepayment: rat("50"), p: flat("0.01"), scale: 2},
			"1920", "480", "4", "19.2", "30.8"},
		{"capped at the prepayment", terms{gpus: 1, limit: rat("3600"), prepayment: rat("1"), p: flat("0.01"), scale: 2},
			"3600", "3600", "1", "1", "0"},
		{"T past the limit is not sold", terms{gpus: 1, limit: rat("100"), prepayment: rat("100"), p: flat("0.1"), scale: 2},
			"150", "150", "1", "10", "90"},
		{"U clamped to g·T", terms{gpus: 2, limit: rat("100"), prepayment: rat("100"), p: flat("0.1"), scale: 2},
			"500", "100", "2", "20", "80"},
		{"T = 0 charges nothing", terms{gpus: 1, limit: rat("100"), prepayment: rat("100"), p: flat("0.1"), q: flat("1"), scale: 2},
			"0", "0", "1", "0", "100"},
		{"Q at the share: 10 s × Q(2) = 10 × 0.5", terms{gpus: 2, limit: rat("100"), prepayment: rat("100"), q: curve{{rat("1"), rat("0.25")}, {rat("2"), rat("0.5")}}, scale: 2},
			"0", "10", "2", "5", "95"},
		{"below the ramp's foot P is zero", terms{gpus: 1, limit: rat("100"), prepayment: rat("100"), p: curve{{rat("0.5"), rat("0")}, {rat("4"), rat("0.16")}}, scale: 2},
			"30", "60", "1", "0", "100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := settle(tc.t, usage{rat(tc.u), rat(tc.T), rat(tc.s)})
			require.NoError(t, err)
			assert.Equal(t, 0, got.charge.Cmp(rat(tc.charge)), "charge %s, want %s", got.charge.FloatString(4), tc.charge)
			assert.Equal(t, 0, got.refund.Cmp(rat(tc.refund)), "refund %s, want %s", got.refund.FloatString(4), tc.refund)
		})
	}
	_, err := settle(terms{gpus: 1, limit: rat("1"), prepayment: rat("1"), scale: 2}, usage{rat("-1"), rat("1"), rat("1")})
	assert.ErrorContains(t, err, "u is negative")
}

// TestSettleAgreesWithContract: on random terms and readings, the
// rationals here and package contract's fixed-point arithmetic give the
// same charge, to the unit of the scale. Two implementations from one
// page agreeing is what makes the audit worth running.
func TestSettleAgreesWithContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dec := func(max int64, places int32) decimal.Decimal { return decimal.New(rng.Int64N(max), -places) }
	nonzero := 0
	check := func(uint32) bool {
		g := 1 + rng.IntN(8)
		limit := time.Duration(1+rng.Int64N(100000)) * time.Millisecond * 10
		var p, q contract.Curve
		x, y := decimal.Zero, decimal.Zero
		for range rng.IntN(4) {
			x, y = x.Add(dec(300, 2)).Add(decimal.New(1, -2)), y.Add(dec(5000, 5))
			p = append(p, contract.Point{X: x, Y: y})
		}
		x, y = decimal.Zero, decimal.Zero
		for range rng.IntN(3) {
			x, y = x.Add(dec(300, 2)).Add(decimal.New(1, -2)), y.Add(dec(5000, 5))
			q = append(q, contract.Point{X: x, Y: y})
		}
		ct := contract.Terms{Currency: "CRED", GPUs: g, TimeLimit: limit, P: p, Q: q}
		scale := int32(rng.IntN(5))
		ct.Prepayment = contract.MaxCharge(ct, scale)
		if cut := dec(100, 2); rng.IntN(3) == 0 {
			ct.Prepayment = ct.Prepayment.Mul(cut).Truncate(scale)
		}
		T := time.Duration(rng.Int64N(int64(limit) * 3 / 2))
		u := contract.Usage{U: dec(int64(g)*int64(T/time.Millisecond)+1000, 3), T: T, S: dec(int64(g)*1000+500, 3)}
		want, err := contract.Charge(ct, u, scale)
		if err != nil {
			t.Logf("contract refused: %v", err)
			return false
		}
		at := terms{gpus: int64(g), limit: rat(decimal.New(int64(limit), -9).String()), prepayment: rat(ct.Prepayment.String()), p: toCurve(p), q: toCurve(q), scale: scale}
		got, err := settle(at, usage{rat(u.U.String()), rat(decimal.New(int64(T), -9).String()), rat(u.S.String())})
		if want.Charge.IsPositive() {
			nonzero++
		}
		if err != nil || got.charge.Cmp(rat(want.Charge.String())) != 0 || got.refund.Cmp(rat(want.Refund.String())) != 0 {
			t.Logf("terms %+v usage %+v: audit %s/%s, contract %s/%s (%v)", ct, u, got.charge.FloatString(6), got.refund.FloatString(6), want.Charge, want.Refund, err)
			return false
		}
		return true
	}
	require.NoError(t, quick.Check(check, &quick.Config{MaxCount: 3000}))
	assert.Greater(t, nonzero, 1000, "most cases charge something")
}

func toCurve(c contract.Curve) curve {
	out := curve{}
	for _, p := range c {
		out = append(out, point{rat(p.X.String()), rat(p.Y.String())})
	}
	return out
}

const goodLog = `{"type":"accepted","contract":"c1","gpus":1,"time_limit_s":"7200","prepayment":"5","p":[["0","0.001"]],"q":[],"scale":2}
{"type":"started","contract":"c1","gpus":1}
{"type":"accepted","contract":"c2","gpus":2,"time_limit_s":"60","prepayment":"3","p":[["0","0.01"]],"q":[],"scale":2}
{"type":"settled","contract":"c1","gpus":1,"u":"1239","t_s":"1239","s":"1","charge":"1.23","refund":"3.77"}
{"type":"voided","contract":"c2","gpus":2,"charge":"0","refund":"3"}
`

func TestCheck(t *testing.T) {
	t.Run("adds up", func(t *testing.T) {
		rep, err := Check(strings.NewReader(goodLog))
		require.NoError(t, err)
		assert.True(t, rep.OK(), "%v", rep.Mismatches)
		assert.Equal(t, Report{Lines: 5, Accepted: 2, Settled: 1, Voided: 1, Charged: "1.23", Refunded: "6.77"}, rep)
	})
	t.Run("a charge one cent too high", func(t *testing.T) {
		rep, err := Check(strings.NewReader(strings.Replace(goodLog, `"charge":"1.23","refund":"3.77"`, `"charge":"1.24","refund":"3.76"`, 1)))
		require.NoError(t, err)
		require.Len(t, rep.Mismatches, 2)
		assert.Equal(t, &Mismatch{Line: 4, Contract: "c1", Field: "charge", Got: "1.24", Want: "1.23"}, rep.Mismatches[0])
		assert.EqualError(t, rep.Mismatches[1], "line 4: contract c1: refund is 3.76, want 3.77")
	})
	t.Run("a voided contract that kept money", func(t *testing.T) {
		rep, err := Check(strings.NewReader(strings.Replace(goodLog, `"charge":"0","refund":"3"`, `"charge":"1","refund":"2"`, 1)))
		require.NoError(t, err)
		assert.Len(t, rep.Mismatches, 2)
	})
	t.Run("a contract left open", func(t *testing.T) {
		rep, err := Check(strings.NewReader(strings.Join(strings.Split(goodLog, "\n")[:4], "\n")))
		require.NoError(t, err)
		assert.Equal(t, 1, rep.Open)
	})
	for name, bad := range map[string]string{
		"not JSON":               "{",
		"settled, never made":    `{"type":"settled","contract":"c9","u":"1","t_s":"1","s":"1","charge":"0","refund":"0"}`,
		"accepted without terms": `{"type":"accepted","contract":"c9","gpus":1}`,
		"a fraction":             `{"type":"accepted","contract":"c9","gpus":1,"time_limit_s":"1/3","prepayment":"5","p":[],"q":[],"scale":2}`,
		"a curve that falls":     `{"type":"accepted","contract":"c9","gpus":1,"time_limit_s":"1","prepayment":"5","p":[["0","2"],["1","1"]],"q":[],"scale":2}`,
		"an unknown event":       `{"type":"exploded","contract":"c9"}`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Check(strings.NewReader(bad + "\n"))
			assert.ErrorIs(t, err, ErrMalformed)
			assert.ErrorContains(t, err, "line 1")
		})
	}
}
