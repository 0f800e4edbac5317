package mem_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// TestDueHoldsIndex: after random reserves, captures, voids, expiries and
// rolled-back transactions, on a clock that moves, DueHolds lists exactly
// what a scan of every hold finds: the open holds at or past their
// deadline, the earliest first, then by id, up to the limit.
func TestDueHoldsIndex(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := start
	l := mem.New(mem.Options{Now: func() time.Time { return now }})
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	w := currency.WalletID("CRED", "alice")
	rev := currency.RevenueID("CRED", "gpu1")
	for _, a := range []currency.Account{{ID: w, Currency: "CRED", Kind: currency.Wallet}, {ID: rev, Currency: "CRED", Kind: currency.Revenue}} {
		_, err := l.OpenAccount(ctx, a)
		require.NoError(t, err)
	}
	_, err := currency.Do(ctx, l, currency.Grant("CRED", "alice", decimal.NewFromInt(1_000_000), "grant", ""))
	require.NoError(t, err)

	rng := rand.New(rand.NewPCG(1, 2))
	var ids []currency.HoldID
	key := 0
	k := func(p string) string { key++; return fmt.Sprintf("%s/%d", p, key) }
	for step := range 3000 {
		// Few distinct ids, so that ids come back after a rollback.
		id := currency.HoldID(fmt.Sprintf("h%d", rng.IntN(400)))
		deadline := start.Add(time.Duration(rng.IntN(600)) * time.Second)
		switch rng.IntN(6) {
		case 0, 1:
			_, err = l.Apply(ctx, currency.Reserve{Key: k("r"), Hold: id, From: w, Amount: decimal.NewFromInt(1), Deadline: deadline})
			ids = append(ids, id)
		case 2: // a reserve undone by the failure after it
			_, err = l.ApplyAtomic(ctx,
				currency.Reserve{Key: k("r"), Hold: id, From: w, Amount: decimal.NewFromInt(1), Deadline: deadline},
				currency.Capture{Key: k("c"), Hold: id, To: "nobody", Amount: decimal.Zero})
		case 3:
			_, err = l.Apply(ctx, currency.Capture{Key: k("c"), Hold: id, To: rev, Amount: decimal.Zero})
		case 4: // a void undone
			_, err = l.ApplyAtomic(ctx, currency.Void{Key: k("v"), Hold: id},
				currency.Capture{Key: k("c"), Hold: "none", To: rev, Amount: decimal.Zero})
		case 5:
			_, err = l.Apply(ctx, currency.Void{Key: k("v"), Hold: id})
		}
		require.NoError(t, err)
		if step%10 == 0 {
			now = now.Add(time.Duration(rng.IntN(20)) * time.Second)
		}
		if step%7 == 0 {
			ids = slices.Compact(slices.Sorted(slices.Values(ids)))
			var want []currency.Hold
			for _, id := range ids {
				h, err := l.Hold(ctx, id)
				if err == nil && h.Status == currency.HoldOpen && !now.Before(h.Deadline) {
					want = append(want, h)
				}
			}
			slices.SortFunc(want, func(a, b currency.Hold) int {
				if c := a.Deadline.Compare(b.Deadline); c != 0 {
					return c
				}
				return strings.Compare(string(a.ID), string(b.ID))
			})
			limit := rng.IntN(5)
			if limit > 0 && len(want) > limit {
				want = want[:limit]
			}
			got, err := l.DueHolds(ctx, limit)
			require.NoError(t, err)
			require.Equal(t, want, got, "step %d at %v, limit %d", step, now, limit)
			if step%21 == 0 && len(got) > 0 { // the sweep expires some
				_, err = l.Apply(ctx, currency.Expire{Key: k("x"), Hold: got[0].ID})
				require.NoError(t, err)
			}
		}
	}
}
