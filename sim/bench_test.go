package sim_test

import (
	"runtime"
	"testing"
	"time"
)

// BenchmarkMarket is the in-process cost of the market's whole life of a
// contract: offers negotiated by the strategies, the House's escrow, the
// server nodes' starts, readings and stops, and the settlement, on the
// in-memory store, in one goroutine. An op is one offer; it also reports
// µs and allocations per contract, which is what a simulation pays.
func BenchmarkMarket(b *testing.B) {
	m := market(b, 1, max(b.N, 100), nil)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	st := m.Run(365 * 24 * time.Hour)
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if st.Contracts == 0 {
		b.Fatal("no contract")
	}
	n := float64(st.Contracts)
	b.ReportMetric(float64(b.Elapsed().Microseconds())/n, "µs/contract")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/contract")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/contract")
}
