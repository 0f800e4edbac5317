package breakdown

import (
	"github.com/bourse/bourse/internal/dectest"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)

// TestTrendBuckets: the bucket is the coarsest that cuts the contracts'
// span into twelve or more.
func TestTrendBuckets(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		want string
	}{
		{0, "1m"}, {20 * time.Second, "1m"}, {119 * time.Minute, "1m"}, {2 * time.Hour, "10m"}, {12 * time.Hour, "1h"},
		{20 * time.Hour, "1h"}, {72 * time.Hour, "6h"}, {12 * 24 * time.Hour, "day"}, {400 * 24 * time.Hour, "month"},
	} {
		tr := newTrend()
		tr.add(t0, "CRED", dectest.D("1"), dectest.D("1"))
		tr.add(t0.Add(c.span), "CRED", dectest.D("1"), dectest.D("1"))
		assert.Equal(t, c.want, tr.result().Every, "a span of %v", c.span)
	}
	assert.Equal(t, Trend{}, newTrend().result(), "no contracts, no trend")
}

// TestTrendOneDay: a market of one day is drawn by the hour (the
// report's own prices are one point for it), by currency, leaving out
// hours with nothing sold.
func TestTrendOneDay(t *testing.T) {
	tr := newTrend()
	tr.add(t0.Add(10*time.Minute), "CRED", dectest.D("100"), dectest.D("10"))
	tr.add(t0.Add(50*time.Minute), "CRED", dectest.D("100"), dectest.D("30"))
	tr.add(t0.Add(3*time.Hour), "CRED", dectest.D("0"), dectest.D("0")) // voided
	tr.add(t0.Add(5*time.Hour), "EUR", dectest.D("40"), dectest.D("1"))
	tr.add(t0.Add(14*time.Hour), "CRED", dectest.D("10"), dectest.D("1"))
	got := tr.result()
	assert.Equal(t, "1h", got.Every)
	type point struct {
		at       time.Time
		cur, per string
	}
	var ps []point
	for _, p := range got.Points {
		ps = append(ps, point{p.At, p.Currency, p.PerGPUSecond.String()})
	}
	assert.Equal(t, []point{{t0, "CRED", "0.2"}, {t0.Add(14 * time.Hour), "CRED", "0.1"}, {t0.Add(5 * time.Hour), "EUR", "0.025"}}, ps)
}

// TestTrendSums: whatever the contracts and their times, the trend's
// buckets add up to them: nothing lost, nothing counted twice.
func TestTrendSums(t *testing.T) {
	type contract struct {
		Offset uint32 // seconds after t0, within 40 days
		U      uint16
	}
	check := func(cs []contract) bool {
		tr := newTrend()
		total := decimal.Zero
		for _, c := range cs {
			u := decimal.NewFromInt(int64(c.U))
			tr.add(t0.Add(time.Duration(c.Offset%(40*24*3600))*time.Second), "CRED", u, u.Mul(dectest.D("0.5")))
			total = total.Add(u)
		}
		sum := decimal.Zero
		for _, p := range tr.result().Points {
			sum = sum.Add(p.GPUSeconds)
			if !p.Cost.Equal(p.GPUSeconds.Mul(dectest.D("0.5"))) || !p.PerGPUSecond.Equal(dectest.D("0.5")) {
				return false
			}
		}
		return sum.Equal(total)
	}
	require.NoError(t, quick.Check(check, nil))
}
