package mem_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
)

// TestApplyAtomic: a failing op undoes the ops before it and leaves no
// failure under any key, so that the same keys succeed once the cause is
// gone (as a rolled-back SQL transaction leaves them).
func TestApplyAtomic(t *testing.T) {
	ctx := context.Background()
	l := mem.New(mem.Options{})
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	w := currency.WalletID("CRED", "alice")
	_, err := l.OpenAccount(ctx, currency.Account{ID: w, Currency: "CRED", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "grant", From: currency.IssuanceID("CRED"), To: w, Amount: decimal.NewFromInt(10)})
	require.NoError(t, err)
	before, err := l.Audit(ctx)
	require.NoError(t, err)

	rev := currency.RevenueID("CRED", "gpu1")
	ops := []currency.Op{
		currency.Reserve{Key: "escrow/c1", Hold: "c1", From: w, Amount: decimal.NewFromInt(6), Deadline: time.Now().Add(time.Hour)},
		currency.Capture{Key: "settle/c1", Hold: "c1", To: rev, Amount: decimal.NewFromInt(2)}, // no such account yet
	}
	rs, err := l.ApplyAtomic(ctx, ops...)
	require.NoError(t, err)
	require.Len(t, rs, 2)
	assert.Nil(t, rs[0].Err)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(rs[1].Err))

	b, err := l.Balance(ctx, w)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(10)), "the reserve was undone: %s", b.Available)
	assert.True(t, b.Held.IsZero(), "no hold left: %s", b.Held)
	_, err = l.Hold(ctx, "c1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	after, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, after.OK(), "%s", after)
	assert.Equal(t, before.Movements, after.Movements)

	// The same keys work once the account exists: nothing was kept.
	_, err = l.OpenAccount(ctx, currency.Account{ID: rev, Currency: "CRED", Kind: currency.Revenue})
	require.NoError(t, err)
	rs, err = l.ApplyAtomic(ctx, ops...)
	require.NoError(t, err)
	for _, r := range rs {
		require.Nil(t, r.Err)
	}
	b, err = l.Balance(ctx, w)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(8)), "%s", b.Available)
	r, err := l.Balance(ctx, rev)
	require.NoError(t, err)
	assert.True(t, r.Available.Equal(decimal.NewFromInt(2)))
	final, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, final.OK(), "%s", final)
}
