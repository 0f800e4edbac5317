package mem_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// BenchmarkHoldCapture measures one escrow round trip (reserve, then capture
// part and release the rest), the ledger work of one contract.
func BenchmarkHoldCapture(b *testing.B) {
	ctx := context.Background()
	l := mem.New(mem.Options{})
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
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
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
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
