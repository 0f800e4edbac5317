package sqlledger

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
)

// auditFixture is a ledger with a little of everything: a mint, a
// transfer, a captured hold and an open one.
func auditFixture(t *testing.T) *Ledger {
	t.Helper()
	ctx := context.Background()
	l, _ := openTest(t, Options{})
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 0}))
	for _, a := range []currency.Account{
		{ID: "wallet/GPU/alice", Currency: "GPU", Kind: currency.Wallet},
		{ID: "wallet/CRED/alice", Currency: "CRED", Kind: currency.Wallet},
		{ID: "wallet/GPU/bob", Currency: "GPU", Kind: currency.Wallet},
		{ID: "revenue/GPU/srv", Currency: "GPU", Kind: currency.Revenue},
	} {
		_, err := l.OpenAccount(ctx, a)
		require.NoError(t, err)
	}
	d := decimal.RequireFromString
	dl := time.Now().Add(time.Hour)
	rs, err := l.Apply(ctx,
		currency.Transfer{Key: "mint", From: currency.IssuanceID("GPU"), To: "wallet/GPU/alice", Amount: d("100")},
		currency.Transfer{Key: "pay", From: "wallet/GPU/alice", To: "wallet/GPU/bob", Amount: d("10")},
		currency.Reserve{Key: "r1", Hold: "h1", From: "wallet/GPU/alice", Amount: d("30"), Deadline: dl},
		currency.Capture{Key: "c1", Hold: "h1", To: "revenue/GPU/srv", Amount: d("12.5")},
		currency.Reserve{Key: "r2", Hold: "h2", From: "wallet/GPU/bob", Amount: d("4"), Deadline: dl},
		currency.Convert{Key: "x1", From: "wallet/GPU/alice", To: "wallet/CRED/alice", Amount: d("2"), Rate: d("3")},
	)
	require.NoError(t, err)
	for _, r := range rs {
		require.Nil(t, r.Err)
	}
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%s", rep)
	assert.Equal(t, currency.Report{Currencies: 2, Accounts: 8, Movements: 8, Holds: 2, OpenHolds: 1}, rep)
	return l
}

// TestAuditCorruption breaks each invariant with SQL behind the ledger's
// back and requires Audit to name it.
func TestAuditCorruption(t *testing.T) {
	cases := []struct {
		name, sql string
		rule      string
		who       currency.Violation // the fields that must match, Detail too if given (money at GPU's 2 places)
	}{
		{"ZeroSum", `UPDATE accounts SET balance = balance + 1, entry_count = entry_count + 1 WHERE id = 'wallet/GPU/bob';
INSERT INTO entries SELECT uid, entry_count, gen_random_uuid(), 1, balance FROM accounts WHERE id = 'wallet/GPU/bob'`,
			currency.RuleZeroSum, currency.Violation{Currency: "GPU", Detail: "balances sum to 1.00"}},
		{"NonNegative", `UPDATE accounts SET balance = -1 WHERE id = 'wallet/GPU/bob'`,
			currency.RuleNonNegative, currency.Violation{Account: "wallet/GPU/bob", Detail: "balance -1.00"}},
		{"EntriesBalance", `UPDATE accounts SET balance = balance + 1 WHERE id = 'wallet/GPU/alice';
UPDATE accounts SET balance = balance - 1 WHERE id = 'wallet/GPU/bob'`,
			currency.RuleEntries, currency.Violation{Account: "wallet/GPU/alice",
				Detail: "balance 76.50 after 5 entries; the entries: 5 (last seq 5) summing to 75.50, last running balance 75.50"}},
		{"Finer", `UPDATE accounts SET balance = balance + 0.005 WHERE id = 'wallet/GPU/bob'`,
			currency.RuleZeroSum, currency.Violation{Currency: "GPU", Detail: "balances sum to 0.005"}},
		{"EntriesCount", `UPDATE accounts SET entry_count = entry_count + 1 WHERE id = 'wallet/GPU/alice'`,
			currency.RuleEntries, currency.Violation{Account: "wallet/GPU/alice"}},
		{"EntriesRunning", `UPDATE entries SET balance_after = balance_after + 1
WHERE seq = 1 AND account_uid = (SELECT uid FROM accounts WHERE id = 'wallet/GPU/alice')`,
			currency.RuleEntries, currency.Violation{Account: "wallet/GPU/alice"}},
		{"DoubleEntryCurrency", `UPDATE movements SET currency = 'EUR' WHERE id = 't/pay'`,
			currency.RuleDoubleEntry, currency.Violation{Currency: "EUR"}},
		{"DoubleEntryMissing", `DELETE FROM entries WHERE movement_uid = (SELECT uid FROM movements WHERE id = 't/pay')
  AND account_uid = (SELECT uid FROM accounts WHERE id = 'wallet/GPU/bob')`,
			currency.RuleDoubleEntry, currency.Violation{Currency: "GPU"}},
		{"DoubleEntryOrphan", `UPDATE entries SET movement_uid = gen_random_uuid()
WHERE seq = 1 AND account_uid = (SELECT uid FROM accounts WHERE id = 'wallet/GPU/bob')`,
			currency.RuleDoubleEntry, currency.Violation{Account: "wallet/GPU/bob"}},
		{"AppliedTwice", `INSERT INTO movements SELECT gen_random_uuid(), id, idem_key, currency, from_account, to_account,
  amount, hold_id, memo, posted, posted_ns FROM movements WHERE id = 't/pay'`,
			currency.RuleAppliedOnce, currency.Violation{Currency: "GPU"}},
		{"KeyTwice", `UPDATE movements SET idem_key = 'pay' WHERE id = 't/mint'`,
			currency.RuleAppliedOnce, currency.Violation{Currency: "GPU"}},
		{"ExchangeHalf", `WITH gone AS (DELETE FROM movements WHERE id = 'x/x1/in' RETURNING uid)
DELETE FROM entries WHERE movement_uid IN (SELECT uid FROM gone)`,
			currency.RuleConversionWhole, currency.Violation{Currency: "GPU"}},
		{"ResultTwice", `INSERT INTO results SELECT gen_random_uuid(), idem_key, fingerprint, result FROM results WHERE idem_key = 'pay'`,
			currency.RuleAppliedOnce, currency.Violation{}},
		{"HoldResolvedUnbalanced", `UPDATE holds SET released = released + 1 WHERE id = 'h1'`,
			currency.RuleHoldBalanced, currency.Violation{Hold: "h1", Detail: "captured hold of 30.00: captured 12.50 + released 18.50, 0.00 left in escrow"}},
		{"HoldOpenUnbalanced", `UPDATE holds SET amount = 5 WHERE id = 'h2'`,
			currency.RuleHoldBalanced, currency.Violation{Hold: "h2", Detail: "open hold of 5.00 has 4.00 in escrow"}},
		{"HoldEscrowLeft", `UPDATE holds SET status = 'voided', captured = 0, released = amount WHERE id = 'h2'`,
			currency.RuleHoldBalanced, currency.Violation{Hold: "h2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := auditFixture(t)
			ctx := context.Background()
			_, err := l.pool.Exec(ctx, c.sql)
			require.NoError(t, err)
			rep, err := l.Audit(ctx)
			require.NoError(t, err)
			require.False(t, rep.OK(), "the corruption went unnoticed")
			found := false
			for _, v := range rep.Violations {
				if v.Rule == c.rule &&
					(c.who.Currency == "" || v.Currency == c.who.Currency) &&
					(c.who.Account == "" || v.Account == c.who.Account) &&
					(c.who.Hold == "" || v.Hold == c.who.Hold) &&
					(c.who.Detail == "" || v.Detail == c.who.Detail) {
					found = true
				}
			}
			assert.True(t, found, "no %s violation for %+v in\n%s", c.rule, c.who, rep)
			t.Logf("%s", rep)
		})
	}
}
