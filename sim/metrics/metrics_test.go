package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestJain(t *testing.T) {
	assert.InDelta(t, 1, Jain([]float64{3, 3, 3}), 1e-12, "even")
	assert.InDelta(t, 0.25, Jain([]float64{0, 0, 0, 8}), 1e-12, "all to one of four")
	assert.InDelta(t, 0.9, Jain([]float64{1, 2}), 1e-12, "(1+2)²/(2·5)")
	assert.Zero(t, Jain(nil))
}

// TestQuantilesWithinOnePercent: against the exact quantiles of a sorted
// sample, heavy-tailed, in any order.
func TestQuantilesWithinOnePercent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q Quantiles
	var all []float64
	for range 100000 {
		v := math.Exp(rng.NormFloat64()*2) * 60
		all = append(all, v)
		q.Add(v)
	}
	slices.Sort(all)
	for _, p := range []float64{0.5, 0.9, 0.99} {
		exact := all[int(math.Ceil(p*float64(len(all))))-1]
		assert.InEpsilon(t, exact, q.Quantile(p), 0.01, "p%v", p)
	}
	var z Quantiles
	z.Add(0)
	z.Add(0)
	z.Add(10)
	assert.Zero(t, z.Quantile(0.5), "zeros count")
	assert.InEpsilon(t, 10, z.Quantile(1), 0.01)
}

// TestCollector: two clients, a known schedule; every figure by hand.
func TestCollector(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCollector(t0, 4, time.Hour)
	c.Fund("a", 100)
	c.Fund("b", 300)
	c.Arrive("a")
	c.Arrive("b")
	c.Arrive("b")
	c.Allocate(t0, 2)                     // a's job: 2 GPUs for the first hour
	c.Allocate(t0.Add(30*time.Minute), 2) // b's: 2 GPUs from 30m to 90m
	c.Release(t0.Add(time.Hour), 2)
	c.Settle("a", 7200, 36, 72)
	c.Complete("a", 0, time.Hour, time.Hour, false)
	c.Sample(0, 1)
	c.Release(t0.Add(90*time.Minute), 2)
	c.Settle("b", 3600, 36, 20)
	c.Complete("b", 30*time.Minute, 90*time.Minute, time.Hour, true)
	c.Reject(false)
	c.Sample(0, 0) // the second hour: no arrival
	r := c.Result(t0.Add(2 * time.Hour))
	s := r.Summary
	assert.Equal(t, 3, s.Jobs)
	assert.Equal(t, 2, s.Completed)
	assert.Equal(t, 1, s.Rejected)
	assert.Equal(t, 1, s.DeadlineMisses)
	assert.InDelta(t, 72.0, s.Revenue, 1e-9)
	// 2 GPUs·30m + 4·30m + 2·30m = 4 GPU-hours of 4 GPUs·2h.
	assert.InDelta(t, 0.5, s.Utilization, 1e-9)
	assert.InDelta(t, 72.0/10800, s.PriceIndex, 1e-12)
	assert.InDelta(t, 92.0, s.Welfare, 1e-9)
	assert.InDelta(t, 20.0, s.Surplus, 1e-9)
	assert.InEpsilon(t, 1.5, s.RhoP99, 0.01)
	assert.InDelta(t, Jain([]float64{7200, 3600}), s.JainGPU, 1e-12)
	assert.InDelta(t, Jain([]float64{72, 12}), s.JainFunding, 1e-12)
	if assert.Len(t, r.Series, 2) {
		p := r.Series[0]
		assert.InDelta(t, 0.75, p.Utilization, 1e-9, "3 GPU-hours of 4 in the first hour")
		assert.InDelta(t, 36.0/7200, p.Price, 1e-12)
		assert.Equal(t, 1, p.Queued)
		assert.Equal(t, 3, p.Arrivals, "the three jobs arrived in the first hour")
		assert.Equal(t, 0, r.Series[1].Arrivals, "and none in the second")
	}
	assert.Equal(t, []string{"a", "b"}, []string{r.Clients[0].ID, r.Clients[1].ID})
	assert.InDelta(t, 36.0, r.Clients[0].Surplus, 1e-9)
}

// TestCollectorCountsValueOfWhatRan: a contract that ends without its job
// completing (preempted, its job given up after) counts its value as well
// as its payment: surplus and welfare are the docs' value × GPU-seconds
// used, less what was paid, whatever became of the job.
func TestCollectorCountsValueOfWhatRan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewCollector(t0, 1, time.Hour)
	c.Arrive("a")
	c.Settle("a", 600, 3, 5) // preempted after 600 GPU-s worth 5, paid 3
	c.Reject(false)          // and never resumed
	s := c.Result(t0.Add(time.Hour)).Summary
	assert.Zero(t, s.Completed)
	assert.InDelta(t, 5.0, s.Welfare, 1e-9)
	assert.InDelta(t, 2.0, s.Surplus, 1e-9)
}
