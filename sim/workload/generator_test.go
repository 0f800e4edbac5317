package workload

import (
	"io"
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testSpec is a generator that uses every concern.
func testSpec() GeneratorSpec {
	return GeneratorSpec{
		Arrivals:    ArrivalSpec{Process: "poisson", Rate: 2.5},
		Durations:   DurationSpec{Dist: "lognormal", Median: 10 * time.Minute, Sigma: 1.2, Max: 24 * time.Hour},
		GPUs:        map[int]float64{1: 0.6, 2: 0.2, 4: 0.15, 8: 0.05},
		Models:      map[string]float64{"H100": 0.5, "": 0.5},
		Utilization: Range{0.5, 1},
		Deadlines:   DeadlineSpec{P: 0.3, Slack: [2]float64{1.5, 4}},
		Preemptible: 0.2,
		Clients:     map[string]float64{"ada": 1, "bea": 2},
	}
}

// take reads n jobs from src, or all of them if n is 0.
func take(tb testing.TB, src Source, n int) []Job {
	tb.Helper()
	var jobs []Job
	for n == 0 || len(jobs) < n {
		j, err := src.Next()
		if err == io.EOF {
			break
		}
		require.NoError(tb, err)
		jobs = append(jobs, j)
	}
	return jobs
}

func generate(tb testing.TB, spec GeneratorSpec, seed uint64, n int) []Job {
	tb.Helper()
	g, err := NewGenerator(spec, seed)
	require.NoError(tb, err)
	return take(tb, g, n)
}

func TestGeneratorDeterministic(t *testing.T) {
	a := generate(t, testSpec(), 7, 2000)
	b := generate(t, testSpec(), 7, 2000)
	assert.Equal(t, a, b, "same spec and seed")
	c := generate(t, testSpec(), 8, 2000)
	assert.NotEqual(t, a, c, "another seed")

	// A pinned job: the stream must not change between machines or
	// releases without the samples' test failing too.
	assert.Equal(t, "j000001", a[0].ID)
	assert.Equal(t, "j002000", a[1999].ID)
}

// TestGeneratorStreams: each concern draws from its own stream, so that
// changing one distribution leaves the others' draws as they were.
func TestGeneratorStreams(t *testing.T) {
	a := generate(t, testSpec(), 1, 1000)
	other := testSpec()
	other.Durations = DurationSpec{Dist: "exponential", Mean: time.Hour}
	other.GPUs = map[int]float64{1: 0.1, 16: 0.9}
	b := generate(t, other, 1, 1000)
	for i := range a {
		assert.Equal(t, a[i].Arrival, b[i].Arrival)
		assert.Equal(t, a[i].Client, b[i].Client)
		assert.Equal(t, a[i].Model, b[i].Model)
		assert.Equal(t, a[i].Utilization, b[i].Utilization)
		assert.Equal(t, a[i].Preemptible, b[i].Preemptible)
		assert.Equal(t, a[i].Deadline > 0, b[i].Deadline > 0, "who has a deadline")
	}
	assert.NotEqual(t, a[0].Duration, b[0].Duration)
}

func TestGeneratorIDs(t *testing.T) {
	jobs := generate(t, testSpec(), 3, 0+150000)
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		require.False(t, seen[j.ID], "job %d: ID %s twice", i, j.ID)
		seen[j.ID] = true
	}
	assert.Equal(t, "j000010", jobs[9].ID)
	assert.Equal(t, "j099999", jobs[99998].ID)
	assert.Equal(t, "j100000", jobs[99999].ID)
	assert.Equal(t, "j150000", jobs[149999].ID)
}

func gaps(jobs []Job) []float64 {
	var g []float64
	for i := 1; i < len(jobs); i++ {
		g = append(g, (jobs[i].Arrival - jobs[i-1].Arrival).Seconds())
	}
	return g
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return mean, variance / float64(len(xs)-1)
}

func TestArrivals(t *testing.T) {
	const n = 100000
	t.Run("poisson", func(t *testing.T) {
		jobs := generate(t, testSpec(), 11, n)
		mean, v := meanVar(gaps(jobs))
		assert.InEpsilon(t, 1/2.5, mean, 0.02, "mean gap")
		assert.InEpsilon(t, 1, v/(mean*mean), 0.05, "squared coefficient of variation of exponential gaps")
		assert.True(t, slices.IsSortedFunc(jobs, func(a, b Job) int { return int(a.Arrival - b.Arrival) }))
	})
	t.Run("bursty", func(t *testing.T) {
		spec := testSpec()
		spec.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 10, RateOff: 0.5, MeanOn: 2 * time.Second, MeanOff: 10 * time.Second}
		jobs := generate(t, spec, 11, n)
		mean, v := meanVar(gaps(jobs))
		assert.InEpsilon(t, 1/spec.Arrivals.MeanRate(), mean, 0.05, "mean gap")
		t.Logf("bursty: squared coefficient of variation %.2f", v/(mean*mean))
		assert.Greater(t, v/(mean*mean), 2.0, "burstier than Poisson's 1")
		assert.True(t, slices.IsSortedFunc(jobs, func(a, b Job) int { return int(a.Arrival - b.Arrival) }))
	})
	t.Run("bursty silent off", func(t *testing.T) {
		spec := testSpec()
		spec.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 5, MeanOn: 2 * time.Second, MeanOff: 2 * time.Second}
		jobs := generate(t, spec, 2, 20000)
		mean, _ := meanVar(gaps(jobs))
		assert.InEpsilon(t, 1/2.5, mean, 0.1)
	})
}

func TestDurations(t *testing.T) {
	const n = 100000
	draw := func(d DurationSpec) []time.Duration {
		spec := testSpec()
		spec.Durations = d
		var ds []time.Duration
		for _, j := range generate(t, spec, 5, n) {
			ds = append(ds, j.Duration)
		}
		slices.Sort(ds)
		return ds
	}
	t.Run("lognormal", func(t *testing.T) {
		ds := draw(DurationSpec{Dist: "lognormal", Median: 10 * time.Minute, Sigma: 1.2})
		assert.InEpsilon(t, float64(10*time.Minute), float64(ds[n/2]), 0.03, "median")
		// The 84th percentile is a sigma above the median.
		assert.InEpsilon(t, float64(10*time.Minute)*math.Exp(1.2), float64(ds[n*841/1000]), 0.05)
		assert.LessOrEqual(t, ds[n-1], DefaultMaxHeavy, "cut at a week by default")
		assert.GreaterOrEqual(t, ds[0], DefaultMinDuration)
	})
	t.Run("pareto", func(t *testing.T) {
		ds := draw(DurationSpec{Dist: "pareto", Min: time.Minute, Alpha: 1.5, Max: 10 * time.Hour})
		assert.Equal(t, time.Minute, ds[0])
		// P(X > x) = (min/x)^alpha: half the jobs are above 2^(1/1.5) min.
		assert.InEpsilon(t, float64(time.Minute)*math.Pow(2, 1/1.5), float64(ds[n/2]), 0.03)
		assert.Equal(t, 10*time.Hour, ds[n-1], "clamped")
	})
	t.Run("exponential", func(t *testing.T) {
		ds := draw(DurationSpec{Dist: "exponential", Mean: time.Hour})
		sum := 0.0
		for _, d := range ds {
			sum += d.Hours()
		}
		assert.InEpsilon(t, 1, sum/n, 0.02)
	})
	t.Run("fixed", func(t *testing.T) {
		ds := draw(DurationSpec{Dist: "fixed", Value: 90 * time.Second})
		assert.Equal(t, 90*time.Second, ds[0])
		assert.Equal(t, 90*time.Second, ds[n-1])
	})
	t.Run("clamp", func(t *testing.T) {
		ds := draw(DurationSpec{Dist: "exponential", Mean: time.Hour, Min: 10 * time.Minute, Max: 2 * time.Hour})
		assert.Equal(t, 10*time.Minute, ds[0])
		assert.Equal(t, 2*time.Hour, ds[n-1])
	})
}

func TestGeneratorMix(t *testing.T) {
	const n = 100000
	jobs := generate(t, testSpec(), 9, n)
	gpus := map[int]int{}
	models := map[string]int{}
	clients := map[string]int{}
	var deadlines, preemptible int
	for _, j := range jobs {
		gpus[j.GPUs]++
		models[j.Model]++
		clients[j.Client]++
		if j.Preemptible {
			preemptible++
		}
		assert.True(t, j.Utilization >= 0.5 && j.Utilization <= 1, "utilization %v", j.Utilization)
		assert.Equal(t, j.Utilization, math.Round(j.Utilization*1000)/1000, "in thousandths")
		assert.Equal(t, j.Duration, j.Reference)
		if j.Deadline > 0 {
			deadlines++
			slack := float64(j.Deadline) / float64(j.Duration)
			assert.True(t, slack >= 1.5-1e-3 && slack <= 4+1e-3, "slack %v", slack)
		}
	}
	frac := func(k int) float64 { return float64(k) / n }
	for g, w := range testSpec().GPUs {
		assert.InDelta(t, w, frac(gpus[g]), 0.01, "%d GPUs", g)
	}
	assert.Len(t, gpus, 4)
	assert.InDelta(t, 0.5, frac(models["H100"]), 0.01)
	assert.InDelta(t, 2.0/3, frac(clients["bea"]), 0.01)
	assert.InDelta(t, 0.3, frac(deadlines), 0.01)
	assert.InDelta(t, 0.2, frac(preemptible), 0.01)
}

func TestGeneratorZeroWeight(t *testing.T) {
	spec := testSpec()
	spec.GPUs = map[int]float64{1: 1, 2: 0, 3: 0}
	for _, j := range generate(t, spec, 1, 10000) {
		require.Equal(t, 1, j.GPUs)
	}
}

// TestGeneratorMemory: a generator holds nothing per job, so a million
// jobs leave the heap as it was.
func TestGeneratorMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a million jobs")
	}
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(t, err)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 1_000_000 {
		if _, err := g.Next(); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	assert.Less(t, int64(after.HeapInuse)-int64(before.HeapInuse), int64(1<<20), "heap grew")
	assert.Less(t, float64(after.Mallocs-before.Mallocs)/1e6, 2.0, "allocations a job")
}

func TestGeneratorAllocs(t *testing.T) {
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(10000, func() { _, _ = g.Next() })
	assert.LessOrEqual(t, allocs, 1.0, "the ID is a job's only allocation")
}

func TestLimit(t *testing.T) {
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(t, err)
	assert.Len(t, take(t, Limit(g, 100, 0), 0), 100)

	g, _ = NewGenerator(testSpec(), 1)
	jobs := take(t, Limit(g, 0, time.Hour), 0)
	require.NotEmpty(t, jobs)
	assert.Less(t, jobs[len(jobs)-1].Arrival, time.Hour)
	assert.InEpsilon(t, 2.5*3600, len(jobs), 0.05)

	g, _ = NewGenerator(testSpec(), 1)
	assert.Len(t, take(t, Limit(g, 10, time.Hour), 0), 10, "whichever comes first")
}

func BenchmarkGenerator(b *testing.B) {
	g, err := NewGenerator(testSpec(), 1)
	require.NoError(b, err)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		if _, err := g.Next(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}
