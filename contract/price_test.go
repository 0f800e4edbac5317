package contract

import (
	"github.com/bourse/bourse/internal/dectest"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

func TestRate(t *testing.T) {
	ramp := Ramp(dectest.D("0.5"), dectest.D("2"), dectest.D("0.004")) // P(1.8993) = 0.004·1.3993/1.5
	assert.Equal(t, 0, ramp.At(dectest.D("1.8993")).Cmp(Price{dectest.D("0.0055972"), dectest.D("1.5")}))
	assert.True(t, ramp.At(dectest.D("1.8993")).Decimal(7).Equal(dectest.D("0.0037315")))
	assert.Equal(t, -1, ramp.At(dectest.D("1")).Cmp(ramp.At(dectest.D("1.5"))))
	assert.Equal(t, 0, ramp.At(dectest.D("0.2")).Cmp(Price{decimal.Zero, one}), "zero below the first breakpoint")
	assert.Equal(t, 0, ramp.At(dectest.D("9")).Cmp(Price{dectest.D("0.004"), one}), "flat above the last")

	t.Run("FullUsePrice", func(t *testing.T) {
		// 2 GPUs, P(2) = 0.004 per GPU-second, Q(2) = 0.002 per second:
		// (0.004·2 + 0.002)/2 = 0.005 per GPU-second.
		tm := Terms{GPUs: 2, P: ramp, Q: Flat(dectest.D("0.002"))}
		assert.Equal(t, 0, tm.FullUsePrice().Cmp(Price{dectest.D("0.005"), one}))
		cheaper := tm
		cheaper.Q = nil
		assert.Equal(t, -1, cheaper.FullUsePrice().Cmp(tm.FullUsePrice()), "Q counts")
	})
	t.Run("SurePrice", func(t *testing.T) {
		price := func(s string) Price { return Price{dectest.D(s), one} }
		for _, tc := range []struct {
			name string
			t    Terms
			want Price
		}{
			{"flat, prepaid in full", Terms{GPUs: 1, TimeLimit: 100 * time.Second, Prepayment: dectest.D("1"), P: Flat(dectest.D("0.01"))}, price("0.01")},
			{"dear only at full use: its price at no use", Terms{GPUs: 4, TimeLimit: time.Hour, Prepayment: dectest.D("14400000"),
				P: Curve{{X: decimal.Zero, Y: dectest.D("0.001")}, {X: dectest.D("3.96"), Y: dectest.D("0.001")}, {X: dectest.D("4"), Y: dectest.D("1000")}}}, price("0.001")},
			{"nothing below full use", Terms{GPUs: 1, TimeLimit: time.Hour, Prepayment: dectest.D("3600000"),
				P: Curve{{X: dectest.D("0.999"), Y: decimal.Zero}, {X: dectest.D("1"), Y: dectest.D("1000")}}}, price("0")},
			{"a small prepayment: its spread over the GPU-seconds", Terms{GPUs: 2, TimeLimit: 100 * time.Second, Prepayment: dectest.D("0.01"),
				P: Flat(dectest.D("1000"))}, Price{dectest.D("0.01"), dectest.D("200")}},
			{"q at all g GPUs counts, per GPU", Terms{GPUs: 2, TimeLimit: time.Second, Prepayment: dectest.D("100"),
				P: Flat(dectest.D("0.004")), Q: Flat(dectest.D("0.002"))}, price("0.005")},
		} {
			assert.Equal(t, 0, tc.t.SurePrice().Cmp(tc.want), "%s: %s", tc.name, tc.t.SurePrice().Decimal(12))
			assert.LessOrEqual(t, tc.t.SurePrice().Cmp(tc.t.FullUsePrice()), 0, "%s: never more than at full use", tc.name)
		}
	})
	t.Run("Covers", func(t *testing.T) {
		reserve := Flat(dectest.D("0.01"))
		assert.True(t, Flat(dectest.D("0.01")).Covers(reserve, dectest.D("4")))
		assert.False(t, Flat(dectest.D("0.0099")).Covers(reserve, dectest.D("4")))
		// A ramp that reaches the reserve only at 2 GPUs covers it for no g:
		// just above zero it pays nothing.
		assert.False(t, Ramp(dectest.D("0"), dectest.D("2"), dectest.D("0.02")).Covers(reserve, dectest.D("1")))
		// The reserve starting at 1 GPU is covered by a curve starting there
		// at the same price: the jumps coincide.
		assert.True(t, Curve{{X: dectest.D("1"), Y: dectest.D("0.01")}}.Covers(Curve{{X: dectest.D("1"), Y: dectest.D("0.01")}}, dectest.D("4")))
		assert.False(t, Curve{{X: dectest.D("1.5"), Y: dectest.D("0.02")}}.Covers(Curve{{X: dectest.D("1"), Y: dectest.D("0.01")}}, dectest.D("4")),
			"between 1 and 1.5 the offer pays nothing")
	})
	t.Run("CappedPrepayment", func(t *testing.T) {
		tm := Terms{GPUs: 1, TimeLimit: 100 * time.Second, P: Flat(dectest.D("0.01"))} // at most 1.00
		assert.True(t, tm.CappedPrepayment(2).Equal(dectest.D("1")), "none named: the maximum")
		tm.Prepayment = dectest.D("5")
		assert.True(t, tm.CappedPrepayment(2).Equal(dectest.D("1")), "more than can be charged")
		tm.Prepayment = dectest.D("0.4")
		assert.True(t, tm.CappedPrepayment(2).Equal(dectest.D("0.4")))
	})
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		name           string
		offer, reserve Curve
		g              int64
		want           bool
	}{
		{"both empty", nil, nil, 4, true},
		{"empty reserve", pts("1", "0"), nil, 4, true},
		{"empty offer", nil, pts("0", "0.01"), 4, false},
		{"dearer flat", pts("0", "2"), pts("0", "1"), 4, true},
		{"equal", pts("0", "1", "2", "3"), pts("0", "1", "2", "3"), 4, true},
		{"cheaper flat", pts("0", "1"), pts("0", "2"), 4, false},
		{"ramp starts below", pts("0", "0", "4", "4"), pts("0", "1"), 4, false},
		{"offer jumps late", pts("1", "5"), pts("0", "1"), 4, false},
		{"reserve jumps late", pts("0", "1"), pts("1", "1"), 4, true},
		// The offer is zero just left of its jump at 1, where the reserve
		// has risen to almost 1: only the left limit shows it.
		{"left of the offer's jump", pts("1", "5"), pts("0.5", "0", "1", "1"), 2, false},
		{"left of the offer's jump, reserve zero", pts("1", "5"), pts("0.5", "0", "1", "0"), 2, true},
		{"short only beyond g", pts("0", "1", "2", "3", "3", "3"), pts("0", "1", "2", "3", "3", "4"), 2, true},
		{"short at g", pts("0", "1", "2", "3", "3", "3"), pts("0", "1", "2", "3", "3", "4"), 3, false},
		{"crossing between breakpoints", pts("0", "1", "4", "2"), pts("0", "0.5", "4", "2.5"), 4, false},
		{"crossing beyond g", pts("0", "1", "4", "2"), pts("0", "0.5", "4", "2.5"), 2, true},
		// The offer at 1 is exactly 1/3, which no decimal writes.
		{"a third above", pts("0", "0", "3", "1"), pts("1", "0.333333333333333333"), 1, true},
		{"a third below", pts("0", "0", "3", "1"), pts("1", "0.333333333333333334"), 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.offer.Covers(tc.reserve, decimal.NewFromInt(tc.g)))
		})
	}
}

// TestPriceFloorCeil: a price rounds down and up once, from its exact
// value: a third, and one just past a place that half-up rounding at
// more places first would lose.
func TestPriceFloorCeil(t *testing.T) {
	for _, c := range []struct {
		p           Price
		places      int32
		floor, ceil string
	}{
		{Price{dectest.D("1"), dectest.D("3")}, 8, "0.33333333", "0.33333334"},
		{Price{dectest.D("2"), dectest.D("3")}, 2, "0.66", "0.67"},
		{Price{dectest.D("0.5"), one}, 2, "0.5", "0.5"},
		{Price{decimal.Zero, one}, 2, "0", "0"},
		{Price{dectest.D("1.0000000000000000000000000001"), one}, 8, "1", "1.00000001"},
	} {
		assert.Equal(t, c.floor, c.p.Floor(c.places).String(), "floor %v", c.p)
		assert.Equal(t, c.ceil, c.p.Ceil(c.places).String(), "ceil %v", c.p)
	}
}
