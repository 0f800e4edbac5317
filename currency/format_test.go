package currency_test

import (
	"testing"

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
