package mem_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// holdCaptures makes n reserve+capture pairs, one simulated second each,
// calling every(i) after each pair, and returns the heap in use after a GC.
func holdCaptures(t testing.TB, l *mem.Ledger, clock *time.Time, n int, every func(i int)) uint64 {
	ctx := context.Background()
	const code currency.Code = "MEM"
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: code, Scale: 2}))
	w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(code, "c"), Currency: code, Kind: currency.Wallet})
	require.NoError(t, err)
	srv, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID(code, "s"), Currency: code, Kind: currency.Revenue})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Grant(code, "c", decimal.NewFromInt(1e12), "fund", ""))
	require.NoError(t, err)
	hold, capture := decimal.NewFromInt(10), decimal.RequireFromString("3.25")
	for i := range n {
		id := currency.HoldID(fmt.Sprintf("contract-%09d", i))
		if _, err := currency.Do(ctx, l, currency.Reserve{Key: "escrow/" + string(id), Hold: id, From: w.ID, Amount: hold, Deadline: clock.Add(time.Hour), Memo: "contract"}); err != nil {
			t.Fatal(err)
		}
		if _, err := currency.Do(ctx, l, currency.Capture{Key: "settle/" + string(id), Hold: id, To: srv.ID, Amount: capture, Memo: "settled"}); err != nil {
			t.Fatal(err)
		}
		*clock = clock.Add(time.Second)
		every(i)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// TestCompactBoundsMemory: 200,000 contracts' worth of escrow, compacted
// every 1,000, keep the heap small; the same without Compact grows with
// every pair.
func TestCompactBoundsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("200k pairs")
	}
	const limit = 50 << 20
	run := func(n int, remember time.Duration, compact bool) uint64 {
		clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		l := mem.New(mem.Options{Now: func() time.Time { return clock }, Remember: remember})
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base := ms.HeapInuse
		inuse := holdCaptures(t, l, &clock, n, func(i int) {
			if compact && i%1000 == 999 {
				l.Compact(clock.Add(-time.Minute))
			}
		})
		rep, err := l.Audit(context.Background())
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s", rep)
		runtime.KeepAlive(l)
		return inuse - min(base, inuse)
	}
	forever := run(200_000, 0, true)
	hour := run(200_000, time.Hour, true)
	grown := run(50_000, 0, false)
	t.Logf("heap in use: 200k pairs compacted every 1k: %.1f MB (fingerprints kept for ever), %.1f MB (kept an hour); 50k pairs never compacted: %.1f MB",
		float64(forever)/(1<<20), float64(hour)/(1<<20), float64(grown)/(1<<20))
	assert.Less(t, forever, uint64(limit))
	assert.Less(t, hour, uint64(limit))
	assert.Greater(t, grown, 4*hour, "without Compact the heap grows")
}
