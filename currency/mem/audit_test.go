package mem

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
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

// TestAuditMoneyAtPlaces: a violation's words give money at its
// currency's places (GPU has 2), and exactly where a broken ledger holds
// a finer amount.
func TestAuditMoneyAtPlaces(t *testing.T) {
	ctx := context.Background()
	a, b := currency.WalletID("GPU", "a"), currency.WalletID("GPU", "b")
	for _, tc := range []struct {
		name    string
		corrupt func(l *Ledger)
		want    []string // violations, as Report writes them
	}{
		{"NonNegative", func(l *Ledger) {
			l.accounts[a].balance, l.accounts[b].balance = l.accounts[a].balance.Add(decimal.NewFromInt(7)), l.accounts[b].balance.Sub(decimal.NewFromInt(7))
		}, []string{"non_negative GPU wallet/GPU/b: balance -7.00",
			"entries GPU wallet/GPU/a: balance 13.00, carried forward 0.00 and movements sum to 6.00, entries to 6.00",
			"entries GPU wallet/GPU/b: balance -7.00, carried forward 0.00 and movements sum to 0.00, entries to 0.00"}},
		{"ZeroSum", func(l *Ledger) {
			l.accounts[b].balance = decimal.NewFromInt(1)
		}, []string{"zero_sum GPU: balances sum to 1.00", "entries GPU wallet/GPU/b: balance 1.00, carried forward 0.00 and movements sum to 0.00, entries to 0.00"}},
		{"Finer", func(l *Ledger) {
			l.accounts[b].balance = decimal.RequireFromString("0.005")
		}, []string{"zero_sum GPU: balances sum to 0.005", "entries GPU wallet/GPU/b: balance 0.005, carried forward 0.00 and movements sum to 0.00, entries to 0.00"}},
		{"Entries", func(l *Ledger) {
			l.accounts[a].entries[0].balance = decimal.NewFromInt(99)
		}, []string{"entries GPU wallet/GPU/a: entry 1 says balance 99.00, entries add up to 10.00",
			"entries GPU wallet/GPU/a: entry 2 says balance 6.00, entries add up to 95.00"}},
		{"HoldBalanced", func(l *Ledger) {
			h := l.holds["h"]
			h.Status = currency.HoldVoided
			l.holds["h"] = h
		}, []string{"hold_balanced GPU h: voided hold of 4.00: captured 0.00 + released 0.00, 4.00 left in escrow",
			"hold_balanced wallet/GPU/a: held 4.00, open holds sum to 0.00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Options{Now: func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }})
			require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
			for _, id := range []currency.AccountID{a, b} {
				_, err := l.OpenAccount(ctx, currency.Account{ID: id, Currency: "GPU", Kind: currency.Wallet})
				require.NoError(t, err)
			}
			_, err := currency.Do(ctx, l, currency.Transfer{Key: "m", From: currency.IssuanceID("GPU"), To: a, Amount: decimal.NewFromInt(10)})
			require.NoError(t, err)
			_, err = currency.Do(ctx, l, currency.Reserve{Key: "r", Hold: "h", From: a, Amount: decimal.NewFromInt(4), Deadline: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
			require.NoError(t, err)
			tc.corrupt(l)
			rep, err := l.Audit(ctx)
			require.NoError(t, err)
			var got []string
			for _, v := range rep.Violations {
				got = append(got, v.String())
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}
