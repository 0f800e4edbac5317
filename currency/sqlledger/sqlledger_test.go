package sqlledger

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/ledgertest"
)

// TestConformance runs the ledger's conformance suite with group commit
// (the default), whose groups mix the calls of the suite's concurrent
// goroutines, and without, where every call is a transaction and the
// concurrent ones meet in row locks and serialization failures.
func TestConformance(t *testing.T) {
	testURL(t)
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"GroupCommit", Options{}},
		{"NoGroupCommit", Options{GroupCommit: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgertest.Run(t, func(t testing.TB, now func() time.Time) currency.Ledger {
				opts := c.opts
				opts.Now = now
				l, _ := openTest(t, opts)
				return l
			})
		})
	}
}

// TestConcurrentProcesses runs the suite's concurrent workload through
// three ledgers on one database, as three processes would run it: their
// transactions meet in the database only, in row locks and serialization
// failures, which they retry.
func TestConcurrentProcesses(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
	}{
		{"GroupCommit", Options{}},
		{"NoGroupCommit", Options{GroupCommit: -1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ledgertest.RunConcurrent(t, func(t testing.TB, now func() time.Time) currency.Ledger {
				opts := c.opts
				opts.Now = now
				first, dbURL := openTest(t, opts)
				s := &spread{ls: []*Ledger{first}}
				for range 2 {
					l, err := Open(context.Background(), dbURL, opts)
					require.NoError(t, err)
					t.Cleanup(l.Close)
					s.ls = append(s.ls, l)
				}
				t.Cleanup(func() {
					var retries int64
					for _, l := range s.ls {
						retries += l.retries.Load()
					}
					t.Logf("%d transactions retried", retries)
				})
				return s
			}, ledgertest.ConcurrentConfig{})
		})
	}
}

// spread is a currency.Ledger that hands each call to the next of several
// ledgers.
type spread struct {
	ls []*Ledger
	n  atomic.Uint64
}

func (s *spread) next() *Ledger { return s.ls[s.n.Add(1)%uint64(len(s.ls))] }

func (s *spread) CreateCurrency(ctx context.Context, c currency.Currency) error {
	return s.next().CreateCurrency(ctx, c)
}
func (s *spread) Currency(ctx context.Context, code currency.Code) (currency.Currency, error) {
	return s.next().Currency(ctx, code)
}
func (s *spread) OpenAccount(ctx context.Context, a currency.Account) (currency.Account, error) {
	return s.next().OpenAccount(ctx, a)
}
func (s *spread) Account(ctx context.Context, id currency.AccountID) (currency.Account, error) {
	return s.next().Account(ctx, id)
}
func (s *spread) Apply(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	return s.next().Apply(ctx, ops...)
}
func (s *spread) Balance(ctx context.Context, id currency.AccountID) (currency.Balance, error) {
	return s.next().Balance(ctx, id)
}
func (s *spread) Balances(ctx context.Context, ids ...currency.AccountID) ([]currency.Balance, error) {
	return s.next().Balances(ctx, ids...)
}
func (s *spread) Hold(ctx context.Context, id currency.HoldID) (currency.Hold, error) {
	return s.next().Hold(ctx, id)
}
func (s *spread) DueHolds(ctx context.Context, limit int) ([]currency.Hold, error) {
	return s.next().DueHolds(ctx, limit)
}
func (s *spread) Statement(ctx context.Context, id currency.AccountID, after int64, limit int) ([]currency.Entry, error) {
	return s.next().Statement(ctx, id, after, limit)
}
func (s *spread) Audit(ctx context.Context) (currency.Report, error) { return s.next().Audit(ctx) }
func (s *spread) Currencies(ctx context.Context) ([]currency.Currency, error) {
	return s.next().Currencies(ctx)
}
func (s *spread) Accounts(ctx context.Context, q currency.AccountQuery) ([]currency.Account, error) {
	return s.next().Accounts(ctx, q)
}
