package mem

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// TestAuditFindsCorruptionAfterCompact: once Compact has folded entries
// into carried-forward figures and forgotten holds, tampering with what
// is left is still found.
func TestAuditFindsCorruptionAfterCompact(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	setup := func(t *testing.T) *Ledger {
		l := New(Options{Now: func() time.Time { return now }})
		require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
		for _, o := range []string{"a", "b"} {
			_, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", o), Currency: "GPU", Kind: currency.Wallet})
			require.NoError(t, err)
		}
		a, b := currency.WalletID("GPU", "a"), currency.WalletID("GPU", "b")
		for _, op := range []currency.Op{
			currency.Transfer{Key: "m", From: currency.IssuanceID("GPU"), To: a, Amount: decimal.NewFromInt(10)},
			currency.Reserve{Key: "r1", Hold: "h1", From: a, Amount: decimal.NewFromInt(3), Deadline: now.Add(time.Hour)},
			currency.Capture{Key: "c1", Hold: "h1", To: b, Amount: decimal.NewFromInt(1)},
			currency.Reserve{Key: "r2", Hold: "h2", From: a, Amount: decimal.NewFromInt(4), Deadline: now.Add(time.Hour)},
			currency.Transfer{Key: "t", From: a, To: b, Amount: decimal.NewFromInt(2)},
		} {
			_, err := currency.Do(ctx, l, op)
			require.NoError(t, err)
		}
		now = now.Add(time.Minute)
		st := l.Compact(now)
		require.Equal(t, 1, st.Holds, "%+v", st)
		require.NotZero(t, st.Entries)
		rep, err := l.Audit(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s", rep)
		return l
	}
	wallet := func(l *Ledger, o string) *account { return l.accounts[currency.WalletID("GPU", o)] }
	cases := map[string]struct {
		rule    string
		corrupt func(l *Ledger)
	}{
		"carried figure": {currency.RuleEntries, func(l *Ledger) {
			b := wallet(l, "b")
			b.carried = b.carried.Add(decimal.NewFromInt(1))
		}},
		"balance": {currency.RuleZeroSum, func(l *Ledger) {
			b := wallet(l, "b")
			b.balance = b.balance.Add(decimal.NewFromInt(1))
		}},
		"balance moved between wallets": {currency.RuleEntries, func(l *Ledger) {
			a, b := wallet(l, "a"), wallet(l, "b")
			a.balance, b.balance = a.balance.Sub(decimal.NewFromInt(1)), b.balance.Add(decimal.NewFromInt(1))
		}},
		"kept entry dropped": {currency.RuleDoubleEntry, func(l *Ledger) {
			a := wallet(l, "a")
			a.entries = a.entries[1:]
		}},
		"carried past a kept entry": {currency.RuleEntries, func(l *Ledger) {
			a := wallet(l, "a")
			a.upTo = a.entries[0].m.seq
		}},
		"held": {currency.RuleHoldBalanced, func(l *Ledger) {
			l.held[currency.WalletID("GPU", "a")] = decimal.NewFromInt(1)
		}},
		"compacted holds": {currency.RuleHoldBalanced, func(l *Ledger) {
			l.compacted["GPU"].captured = decimal.NewFromInt(5)
		}},
		"negative": {currency.RuleNonNegative, func(l *Ledger) {
			a, b := wallet(l, "a"), wallet(l, "b")
			a.balance, b.balance = a.balance.Add(decimal.NewFromInt(7)), b.balance.Sub(decimal.NewFromInt(7))
		}},
		"movement twice": {currency.RuleAppliedOnce, func(l *Ledger) {
			l.movements = append(l.movements, l.movements[len(l.movements)-1])
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			l := setup(t)
			c.corrupt(l)
			rep, err := l.Audit(ctx)
			require.NoError(t, err)
			var rules []string
			for _, v := range rep.Violations {
				rules = append(rules, v.Rule)
			}
			require.Contains(t, rules, c.rule, "%s", rep)
		})
	}
}
