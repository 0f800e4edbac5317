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
