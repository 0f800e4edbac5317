package caps_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// The caps' account names are in every ledger already: they never change.
func TestNames(t *testing.T) {
	at := utc(2026, 11, 24, 9, 30, 0, 0)
	for _, c := range []struct{ name, got, want string }{
		{"GPUWallet", string(caps.GPUWallet("acme.ml")), "wallet/GPU-CAP/acme.ml"},
		{"GPUOwner", caps.GPUOwner("wallet/GPU-CAP/acme.ml"), "acme.ml"},
		{"SpendCode", string(caps.SpendCode("CRED")), "SPEND-CRED"},
		{"Hour", string(caps.BudgetWallet("alice", "CRED", caps.Hour, at)), "wallet/SPEND-CRED/alice@hour.2026-11-24T09"},
		{"Day", string(caps.BudgetWallet("alice", "CRED", caps.Day, at)), "wallet/SPEND-CRED/alice@day.2026-11-24"},
		{"Month", string(caps.BudgetWallet("acme", "CRED", caps.Month, at)), "wallet/SPEND-CRED/acme@month.2026-11"},
		{"Bucket", string(caps.BucketWallet("alice", "CRED")), "wallet/SPEND-CRED/alice@rate.bucket"},
		{"BucketAnyTime", string(caps.BudgetWallet("alice", "CRED", caps.Bucketed, at)), "wallet/SPEND-CRED/alice@rate.bucket"},
		{"BudgetKey", caps.BudgetKey(caps.BudgetWallet("alice", "CRED", caps.Day, at)), "spend-budget/SPEND-CRED/alice@day.2026-11-24"},
		{"SpentID", string(caps.SpentID("CRED")), "revenue/SPEND-CRED/spent"},
	} {
		assert.Equal(t, c.want, c.got, c.name)
	}
	assert.True(t, caps.Unit(caps.GPUCode))
	assert.True(t, caps.Unit(caps.SpendCode("CRED")))
	assert.False(t, caps.Unit("CRED"))
	assert.True(t, caps.SpendCodeFits("ABCDEFGHIJ"), "10 characters: SPEND-ABCDEFGHIJ is 16")
	assert.False(t, caps.SpendCodeFits("ABCDEFGHIJK"))
}

// Periods tells the budget under way by the clock it is given, and by
// none other.
func TestPeriodsClock(t *testing.T) {
	now := utc(2026, 11, 24, 23, 59, 59, 0)
	p := caps.NewPeriods(func() time.Time { return now })
	assert.Equal(t, now, p.Now())
	assert.Equal(t, currency.AccountID("wallet/SPEND-CRED/alice@day.2026-11-24"), p.Budget("alice", "CRED", caps.Day))
	now = now.Add(time.Second)
	assert.Equal(t, currency.AccountID("wallet/SPEND-CRED/alice@day.2026-11-25"), p.Budget("alice", "CRED", caps.Day))
	assert.Equal(t, currency.AccountID("wallet/SPEND-CRED/alice@month.2026-11"), p.Budget("alice", "CRED", caps.Month), "another day, the same month")
	assert.Panics(t, func() { caps.NewPeriods(nil) }, "no clock of its own")
}
