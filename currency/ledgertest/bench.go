package ledgertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// BenchHoldCapture measures escrow round trips, a Reserve then a Capture of
// part of it (the ledger work of one contract), from `clients` goroutines
// at once, each on its own wallet. It reports pairs/s. Each op is its own
// Apply call, as the exchange makes them; batching is the backend's affair.
func BenchHoldCapture(b *testing.B, l currency.Ledger, clients int) {
	ctx := context.Background()
	const code currency.Code = "BENCH"
	if err := l.CreateCurrency(ctx, currency.Currency{Code: code, Scale: 2}); err != nil {
		b.Fatal(err)
	}
	run := fmt.Sprint(time.Now().UnixNano()) // keys fresh across b.N rounds
	srv, err := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID(code, "srv"), Currency: code, Kind: currency.Revenue})
	if err != nil {
		b.Fatal(err)
	}
	wallets := make([]currency.AccountID, clients)
	for i := range wallets {
		w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(code, fmt.Sprint("c", i)), Currency: code, Kind: currency.Wallet})
		if err != nil {
			b.Fatal(err)
		}
		wallets[i] = w.ID
		if _, err := currency.Do(ctx, l, currency.Transfer{Key: "fund/" + run + "/" + fmt.Sprint(i), From: currency.IssuanceID(code), To: w.ID, Amount: decimal.NewFromInt(1e12)}); err != nil {
			b.Fatal(err)
		}
	}
	hold, capture := decimal.NewFromInt(10), decimal.RequireFromString("3.25")
	deadline := time.Now().Add(time.Hour)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := next.Add(1)
				if n > int64(b.N) {
					return
				}
				id := currency.HoldID(fmt.Sprintf("h/%s/%d", run, n))
				if _, err := currency.Do(ctx, l, currency.Reserve{Key: "r/" + string(id), Hold: id, From: wallets[c], Amount: hold, Deadline: deadline}); err != nil {
					errs <- err
					return
				}
				if _, err := currency.Do(ctx, l, currency.Capture{Key: "c/" + string(id), Hold: id, To: srv.ID, Amount: capture}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pairs/s")
}
