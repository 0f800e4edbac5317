package sim_test

import (
	"context"
	"runtime"
	"testing"
)

// BenchmarkMarket is the in-process cost of a job's whole life in the
// market: offers negotiated by the strategies, the House's escrow, the
// server nodes' starts, readings and stops, and the settlement, on the
// in-memory store, in one goroutine. An op is one job; it reports jobs/s,
// allocations and bytes per job, which is what a simulation pays.
func BenchmarkMarket(b *testing.B) {
	m := demoSimulation(b, 1, max(b.N, 100), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	r, err := m.Run(context.Background())
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if err != nil || r.Summary.Contracts == 0 {
		b.Fatal("no contract", err)
	}
	n := float64(r.Summary.Jobs)
	b.ReportMetric(n/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/job")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/job")
	b.ReportMetric(float64(r.Summary.Contracts)/n, "contracts/job")
	b.ReportMetric(float64(m.Offers())/n, "offers/job")
}
