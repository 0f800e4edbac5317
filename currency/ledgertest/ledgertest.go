// Package ledgertest is the conformance suite that every currency.Ledger
// backend runs unchanged: the rules of the ledger as tests, and a randomized
// concurrent workload checked by an auditor.
package ledgertest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/clocktest"
	"github.com/bourse/bourse/internal/dectest"
)

// Opener returns a new, empty ledger whose clock is now. It registers its
// own cleanup with t.
type Opener func(t testing.TB, now func() time.Time) currency.Ledger

// NewClock starts a manual clock at a fixed instant, for tests of
// deadlines.
func NewClock() *clocktest.Clock {
	return clocktest.New(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
}

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	t.Run("Currencies", func(t *testing.T) { testCurrencies(t, open) })
	t.Run("Accounts", func(t *testing.T) { testAccounts(t, open) })
	t.Run("Listing", func(t *testing.T) { testListing(t, open) })
	t.Run("Balances", func(t *testing.T) { testBalances(t, open) })
	t.Run("Exchange", func(t *testing.T) { testExchange(t, open) })
	t.Run("Transfers", func(t *testing.T) { testTransfers(t, open) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, open) })
	t.Run("UpTo", func(t *testing.T) { testUpTo(t, open) })
	t.Run("IfOpen", func(t *testing.T) { testIfOpen(t, open) })
	t.Run("Holds", func(t *testing.T) { testHolds(t, open) })
	t.Run("Expiry", func(t *testing.T) { testExpiry(t, open) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, open) })
	t.Run("Statement", func(t *testing.T) { testStatement(t, open) })
	t.Run("Concurrent", func(t *testing.T) { RunConcurrent(t, open, ConcurrentConfig{}) })
}

// fixture is a ledger with currency GPU (scale 2) and a few accounts.
type fixture struct {
	t     testing.TB
	ctx   context.Context
	l     currency.Ledger
	clock *clocktest.Clock
}

const gpu currency.Code = "GPU"

func newFixture(t testing.TB, open Opener) *fixture {
	t.Helper()
	c := NewClock()
	f := &fixture{t: t, ctx: context.Background(), l: open(t, c.Now), clock: c}
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 2}))
	return f
}

func (f *fixture) wallet(owner string) currency.AccountID {
	f.t.Helper()
	a, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.WalletID(gpu, owner), Currency: gpu, Kind: currency.Wallet})
	require.NoError(f.t, err)
	return a.ID
}

func (f *fixture) revenue(owner string) currency.AccountID {
	f.t.Helper()
	a, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.RevenueID(gpu, owner), Currency: gpu, Kind: currency.Revenue})
	require.NoError(f.t, err)
	return a.ID
}

func (f *fixture) mint(key string, to currency.AccountID, amount string) {
	f.t.Helper()
	f.ok(currency.Transfer{Key: key, From: currency.IssuanceID(gpu), To: to, Amount: dectest.D(amount)})
}

// ok applies op and requires it to succeed.
func (f *fixture) ok(op currency.Op) currency.Result {
	f.t.Helper()
	r, err := currency.Do(f.ctx, f.l, op)
	require.NoError(f.t, err)
	return r
}

// fails applies op and requires it to fail with code.
func (f *fixture) fails(op currency.Op, code bourse.Code) currency.Result {
	f.t.Helper()
	rs, err := f.l.Apply(f.ctx, op)
	require.NoError(f.t, err, "infrastructure error")
	require.Len(f.t, rs, 1)
	require.NotNil(f.t, rs[0].Err, "expected %s, got success", code)
	require.Equal(f.t, code, rs[0].Err.Code, "error: %v", rs[0].Err)
	return rs[0]
}

// balance requires the account's available and held amounts.
func (f *fixture) balance(id currency.AccountID, available, held string) {
	f.t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(f.t, err)
	require.True(f.t, b.Available.Equal(dectest.D(available)), "%s available: got %s, want %s", id, b.Available, available)
	require.True(f.t, b.Held.Equal(dectest.D(held)), "%s held: got %s, want %s", id, b.Held, held)
}

// audit requires a clean audit and returns its report.
func (f *fixture) audit() currency.Report {
	f.t.Helper()
	r, err := f.l.Audit(f.ctx)
	require.NoError(f.t, err)
	require.True(f.t, r.OK(), "%s", r)
	return r
}
