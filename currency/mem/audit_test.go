package mem

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// TestAuditFindsCorruption breaks each invariant behind the rules' back and
// checks that Audit names it: an audit that cannot fail checks nothing.
func TestAuditFindsCorruption(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) *Ledger {
		l := New(Options{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
		require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
		for _, o := range []string{"a", "b"} {
			_, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("GPU", o), Currency: "GPU", Kind: currency.Wallet})
			require.NoError(t, err)
		}
		_, err := currency.Do(ctx, l, currency.Transfer{Key: "m", From: currency.IssuanceID("GPU"), To: currency.WalletID("GPU", "a"), Amount: decimal.NewFromInt(10)})
		require.NoError(t, err)
		_, err = currency.Do(ctx, l, currency.Reserve{Key: "r", Hold: "h", From: currency.WalletID("GPU", "a"), Amount: decimal.NewFromInt(4), Deadline: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
		require.NoError(t, err)
		rep, err := l.Audit(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%s", rep)
		return l
	}
	cases := map[string]func(l *Ledger){
		currency.RuleNonNegative: func(l *Ledger) {
			a, b := l.accounts[currency.WalletID("GPU", "a")], l.accounts[currency.WalletID("GPU", "b")]
			a.balance, b.balance = a.balance.Add(decimal.NewFromInt(7)), b.balance.Sub(decimal.NewFromInt(7))
		},
		currency.RuleZeroSum: func(l *Ledger) {
			a := l.accounts[currency.WalletID("GPU", "b")]
			a.balance = a.balance.Add(decimal.NewFromInt(1))
		},
		currency.RuleEntries: func(l *Ledger) {
			a := l.accounts[currency.WalletID("GPU", "a")]
			a.entries[0].balance = decimal.NewFromInt(99)
		},
		currency.RuleAppliedOnce: func(l *Ledger) {
			l.movements = append(l.movements, l.movements[0])
		},
		currency.RuleConversionWhole: func(l *Ledger) {
			require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 0}))
			_, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("CRED", "a"), Currency: "CRED", Kind: currency.Wallet})
			require.NoError(t, err)
			_, err = currency.Do(ctx, l, currency.Convert{Key: "x", From: currency.WalletID("GPU", "a"), To: currency.WalletID("CRED", "a"), Amount: decimal.NewFromInt(1), Rate: decimal.NewFromInt(2)})
			require.NoError(t, err)
			l.movements = l.movements[:len(l.movements)-1] // the in leg, gone
		},
		currency.RuleHoldBalanced: func(l *Ledger) {
			h := l.holds["h"]
			h.Status = currency.HoldVoided
			l.holds["h"] = h
		},
	}
	for rule, corrupt := range cases {
		t.Run(rule, func(t *testing.T) {
			l := setup(t)
			corrupt(l)
			rep, err := l.Audit(ctx)
			require.NoError(t, err)
			var rules []string
			for _, v := range rep.Violations {
				rules = append(rules, v.Rule)
			}
			require.Contains(t, rules, rule, "%s", rep)
		})
	}
}
