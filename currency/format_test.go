package currency_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// Money is written at its currency's scale and never rounded.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		amount string
		scale  int32
		want   string
	}{
		{"19.2", 2, "19.20"},
		{"500.000000000000000000", 2, "500.00"}, // as DECIMAL(38,18) reads
		{"-40", 2, "-40.00"},
		{"0.000000000000000001", 18, "0.000000000000000001"},
		{"0", 2, "0.00"},
		{"-3", 0, "-3"},
		{"5", 3, "5.000"},
		{"0.125", 2, "0.125"}, // more places than the scale: whole, not 0.13
		{"1.50", -1, "1.5"},   // scale unknown: as it is
	} {
		assert.Equal(t, c.want, currency.Format(dectest.D(c.amount), c.scale), "%s at %d", c.amount, c.scale)
	}
}

// A price is written at the currency's scale, rounded, with more places
// only to keep two significant digits.
func TestFormatPrice(t *testing.T) {
	for _, c := range []struct {
		price string
		scale int32
		want  string
	}{
		{"1080", 2, "1080.00"},
		{"0.44424", 2, "0.44"},
		{"0.445", 2, "0.45"}, // half away from zero
		{"0.0036", 2, "0.0036"},
		{"0.00361", 2, "0.0036"},
		{"0", 2, "0.00"},
		{"12.5", 0, "13"},
		{"1.5", -1, "1.5"},
		{"0.0000000000001", 2, "0.0000000000"}, // at most scale + 8 places
	} {
		assert.Equal(t, c.want, currency.FormatPrice(dectest.D(c.price), c.scale), "%s at %d", c.price, c.scale)
	}
	assert.Equal(t, int32(4), currency.PricePlaces(2, dectest.D("1080"), dectest.D("0.0036")), "a column lines up at the finest it needs")
}

// A column where prices must be told apart writes each in full, at the
// most places any needs and at least the currency's.
func TestExactPlaces(t *testing.T) {
	for _, c := range []struct {
		scale int32
		in    []string
		want  int32
	}{
		{0, []string{"181", "184.5"}, 1},
		{0, []string{"0.5", "0.25", "2"}, 2},
		{0, []string{"0.50", "1.000"}, 1}, // trailing zeros are no places
		{0, []string{"3", "-4"}, 0},
		{0, nil, 0},
		{2, []string{"1800", "1.200024", "1.199988"}, 6}, // levels in their last place apart
		{2, []string{"1080"}, 2},
		{-1, []string{"1.5"}, 1}, // scale unknown: the figures' own
	} {
		var ds []decimal.Decimal
		for _, s := range c.in {
			ds = append(ds, dectest.D(s))
		}
		assert.Equal(t, c.want, currency.ExactPlaces(c.scale, ds...), "%v at %d", c.in, c.scale)
	}
}
