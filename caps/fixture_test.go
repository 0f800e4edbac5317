package caps_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// fixture is an in-memory ledger with the money CRED (cents) and a clock
// that stands still until a test moves it.
type fixture struct {
	t   testing.TB
	ctx context.Context
	l   *mem.Ledger
	now time.Time
}

func newFixture(t testing.TB) *fixture {
	f := &fixture{t: t, ctx: context.Background(), now: utc(2026, 11, 24, 9, 30, 0, 0)}
	f.l = mem.New(mem.Options{Now: f.clock})
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "CRED", Scale: 2}))
	return f
}

func (f *fixture) clock() time.Time { return f.now }

// tx decides ops on the ledger as a transaction reads it, with decide,
// and applies them in that transaction, as the treasury's stores do.
func (f *fixture) tx(decide func(ctx context.Context, tx currency.TxReader) ([]currency.Op, error)) ([]currency.Op, error) {
	f.t.Helper()
	var ops []currency.Op
	err := f.l.Tx(f.ctx, func(ctx context.Context, tx *mem.Tx) error {
		var err error
		if ops, err = decide(ctx, tx); err != nil {
			return err
		}
		rs, err := tx.Apply(ctx, ops...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				return r.Err
			}
		}
		return nil
	})
	return ops, err
}

func (f *fixture) do(op currency.Op) currency.Result {
	f.t.Helper()
	r, err := currency.Do(f.ctx, f.l, op)
	require.NoError(f.t, err)
	return r
}

// balance is id's own balance and what it holds, as text.
func (f *fixture) balance(id currency.AccountID) (available, held string) {
	f.t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(f.t, err)
	return b.Available.String(), b.Held.String()
}

func (f *fixture) audit() {
	f.t.Helper()
	r, err := f.l.Audit(f.ctx)
	require.NoError(f.t, err)
	require.True(f.t, r.OK(), "%s", r)
}
