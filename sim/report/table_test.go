package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/sim/metrics"
)

func TestTable(t *testing.T) {
	rs := fixture()
	var buf bytes.Buffer
	require.NoError(t, Table(&buf, rs))
	out := buf.String()
	t.Log("\n" + out)

	lines := strings.Split(out, "\n")
	assert.Equal(t, "spot-burst", lines[0])
	header := strings.Fields(lines[1])
	assert.Equal(t, []string{"metric", "posted", "auction", "reserve"}, header,
		"policies in the order they first appear")
	for _, m := range metricRows {
		assert.Contains(t, out, m.Name)
	}
	assert.Contains(t, out, "lowest–highest", "the note says how to read a spread")

	// The single-seed policy shows its figures exactly, in their units.
	var reserve metrics.Summary
	for _, r := range rs {
		if r.Policy == "reserve" {
			reserve = r.Summary
		}
	}
	for _, want := range []string{
		money(reserve.Revenue), percent(reserve.Utilization), duration(reserve.WaitP99),
		count(float64(reserve.Completed)), perHour(reserve.PriceIndex), ratio(reserve.RhoP99),
	} {
		assert.Contains(t, out, want)
	}

	// A policy with several seeds shows mean (min–max).
	var revs []float64
	for _, r := range rs {
		if r.Policy == "posted" {
			revs = append(revs, r.Summary.Revenue)
		}
	}
	s := spreadOf(revs)
	assert.Contains(t, out, money(s.Mean)+" ("+money(s.Min)+"–"+money(s.Max)+")")
}

func TestTableEmpty(t *testing.T) {
	assert.ErrorIs(t, Table(&bytes.Buffer{}, nil), errNoResults)
}

func TestUnits(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{duration(0), "0s"},
		{duration(0.35), "350ms"},
		{duration(1.5), "1.5s"},
		{duration(2), "2s"},
		{duration(45), "45s"},
		{duration(90), "1m30s"},
		{duration(3600), "1h"},
		{duration(7200), "2h"},
		{duration(3599.6), "1h"},
		{duration(5430), "1h31m"},
		{duration(86400 + 3*3600), "1d3h"},
		{money(1234567.891), "1,234,567.89"},
		{money(-1234.5), "-1,234.50"},
		{money(12), "12.00"},
		{count(1204), "1,204"},
		{count(1204.33), "1,204.3"},
		{percent(0.7345), "73.5%"},
		{ratio(0.98765), "0.988"},
		{perHour(0.001), "3.60"},
	} {
		assert.Equal(t, c.want, c.got)
	}
}
