package sqlledger

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// BenchmarkHoldCapture measures one escrow round trip (reserve, then
// capture part and release the rest: two Apply calls), the ledger work of
// one contract, as currency/mem's benchmark of the same name does: 64
// wallets paying one server's revenue account, so that every capture
// updates the same row. Compare pairs/s with pgbench's tpcb-like at the
// same number of clients (pgbench -c N).
//
// "group" is the default, group commit; "direct" runs each Apply call in a
// transaction of its own. The clients are goroutines: RunParallel's, with
// the parallelism that makes their number, at the GOMAXPROCS the machine
// has (-cpu N would also run N threads on this machine's cores, and Go's
// spinning locks then waste much of them); one client is a plain loop.
func BenchmarkHoldCapture(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts Options
	}{
		{"group", Options{}},
		{"direct", Options{GroupCommit: -1}},
	} {
		b.Run(mode.name, func(b *testing.B) {
			for _, clients := range []int{1, 8, 32} {
				b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) { benchHoldCapture(b, mode.opts, clients) })
			}
		})
	}
}

func benchHoldCapture(b *testing.B, opts Options, clients int) {
	ctx := context.Background()
	opts.MaxConns = int32(max(4, clients))
	l, _ := openTest(b, opts)
	if err := l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}); err != nil {
		b.Fatal(err)
	}
	const wallets = 64
	for i := range wallets {
		id := currency.WalletID("GPU", fmt.Sprint(i))
		if _, err := l.OpenAccount(ctx, currency.Account{ID: id, Currency: "GPU", Kind: currency.Wallet}); err != nil {
			b.Fatal(err)
		}
		if _, err := currency.Do(ctx, l, currency.Transfer{Key: "m" + fmt.Sprint(i), From: currency.IssuanceID("GPU"), To: id, Amount: decimal.NewFromInt(1e12)}); err != nil {
			b.Fatal(err)
		}
	}
	srv, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID("GPU", "srv"), Currency: "GPU", Kind: currency.Revenue})
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	hold, capture := decimal.NewFromInt(10), decimal.RequireFromString("3.25")
	deadline := time.Now().Add(time.Hour)
	pair := func() {
		i := n.Add(1)
		id := currency.HoldID(fmt.Sprint("h", i))
		w := currency.WalletID("GPU", fmt.Sprint(i%wallets))
		if _, err := currency.Do(ctx, l, currency.Reserve{Key: "r" + string(id), Hold: id, From: w, Amount: hold, Deadline: deadline}); err != nil {
			b.Fatal(err)
		}
		if _, err := currency.Do(ctx, l, currency.Capture{Key: "c" + string(id), Hold: id, To: srv.ID, Amount: capture}); err != nil {
			b.Fatal(err)
		}
	}
	retries := l.retries.Load()
	b.ReportAllocs()
	b.ResetTimer()
	if clients == 1 {
		for b.Loop() {
			pair()
		}
	} else {
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((clients + procs - 1) / procs)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				pair()
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
	b.ReportMetric(float64(l.retries.Load()-retries)/float64(b.N), "retries/pair")
	rep, err := l.Audit(ctx)
	if err != nil || !rep.OK() {
		b.Fatalf("audit after the benchmark: %v %s", err, rep)
	}
}
