package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestHourPrices: the prices a market screen shows, per GPU-hour, in the
// order its columns take them: a line's low, median, high and VWAP where
// it has traded, then its best waiting offer where one waits.
func TestHourPrices(t *testing.T) {
	d := dectest.D
	ls := []protocol.MarketModel{
		{Model: "A100", Prices: &protocol.Prices{Low: d("0.001"), Median: d("0.002"), High: d("0.003"), VWAP: d("0.0025")}},
		{Model: "H100", Waiting: protocol.Depth{Offers: 2, GPUs: 3, Best: d("0.01")}},
		{Model: "L4"},
	}
	var got []string
	for _, p := range protocol.HourPrices(ls) {
		got = append(got, p.String())
	}
	assert.Equal(t, []string{"3.6", "7.2", "10.8", "9", "36"}, got)
}
