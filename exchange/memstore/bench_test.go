package memstore_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
)

// BenchmarkContract is one contract's life in the store, as the House
// makes it: Open (record and escrow), Update to running, Update to
// settled (record and capture), one simulated second apart; with Forget
// and Compact every 1,000 contracts (horizon a minute back) or never. It
// reports the heap still in use after a GC at the end, per contract.
//
//	go test ./exchange/memstore/ -run '^$' -bench Contract -benchtime 200000x -benchmem
func BenchmarkContract(b *testing.B) {
	for _, every := range []int{0, 1000} {
		b.Run(fmt.Sprint("forget=", every), func(b *testing.B) {
			ctx := context.Background()
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			now := func() time.Time { return clock }
			l := mem.New(mem.Options{Now: now, Remember: time.Hour})
			s := memstore.New(l)
			const cur currency.Code = "BENCH"
			if err := l.CreateCurrency(ctx, currency.Currency{Code: cur, Scale: 2}); err != nil {
				b.Fatal(err)
			}
			rev, _ := l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID(cur, "srv"), Currency: cur, Kind: currency.Revenue})
			var clients []string
			for i := range 16 {
				c := fmt.Sprint("c", i)
				clients = append(clients, c)
				w, _ := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cur, c), Currency: cur, Kind: currency.Wallet})
				if _, err := currency.Do(ctx, l, currency.Transfer{Key: "fund/" + c, From: currency.IssuanceID(cur), To: w.ID, Amount: decimal.NewFromInt(1e12)}); err != nil {
					b.Fatal(err)
				}
			}
			prepay, charge := decimal.NewFromInt(10), decimal.RequireFromString("3.25")
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapInuse
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				client := clients[i%len(clients)]
				id := fmt.Sprintf("%s-%d", client, i)
				c := contract.Contract{ID: id, Client: client, Server: "srv", State: contract.StateAccepted,
					Terms:      contract.Terms{Client: client, Currency: string(cur), GPUs: 1, TimeLimit: time.Hour, Prepayment: prepay, P: contract.Flat(decimal.RequireFromString("0.01"))},
					AcceptedAt: clock, StartDeadline: clock.Add(time.Minute)}
				if _, _, err := s.Open(ctx, c, "", currency.Reserve{Key: "escrow/" + id, Hold: currency.HoldID(id), From: currency.WalletID(cur, client), Amount: prepay, Deadline: clock.Add(2 * time.Hour)}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
					c.State, c.StartedAt, c.LastSeen = contract.StateRunning, clock, clock
					return nil, nil
				}); err != nil {
					b.Fatal(err)
				}
				clock = clock.Add(time.Second)
				if _, err := s.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
					c.State, c.Reason, c.SettledAt, c.Charge, c.Refund = contract.StateSettled, contract.ReasonCompleted, clock, charge, prepay.Sub(charge)
					return []currency.Op{currency.Capture{Key: "settle/" + id, Hold: currency.HoldID(id), To: rev.ID, Amount: charge, Memo: "contract " + id}}, nil
				}); err != nil {
					b.Fatal(err)
				}
				if every > 0 && i%every == every-1 {
					s.Forget(clock.Add(-time.Minute))
					l.Compact(clock.Add(-time.Minute))
				}
			}
			b.StopTimer()
			runtime.GC()
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(int64(ms.HeapInuse)-int64(base))/float64(b.N), "retained-B/op")
			runtime.KeepAlive(s)
		})
	}
}
