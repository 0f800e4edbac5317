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

// A read that the prefetch did not foresee still finds what the
// transaction changed: loading a hold brings its wallet along, and a wallet
// in hand, with a balance changed in memory, is kept.
func TestStateLateLoad(t *testing.T) {
	l, _ := openTest(t, Options{})
	ctx := context.Background()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "GPU", Scale: 2}))
	w, err := l.OpenAccount(ctx, currency.Account{ID: "wallet/GPU/a", Currency: "GPU", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = l.Apply(ctx,
		currency.Transfer{Key: "m", From: currency.IssuanceID("GPU"), To: w.ID, Amount: decimal.NewFromInt(10)},
		currency.Reserve{Key: "r", Hold: "h", From: w.ID, Amount: decimal.NewFromInt(4), Deadline: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	var rs []currency.Result
	err = l.run(ctx, "test", func(ctx context.Context, tx *tx) error {
		s := l.newState(tx)
		rs = nil
		// No prefetch: every read is a miss.
		for _, op := range []currency.Op{
			currency.Transfer{Key: "m2", From: currency.IssuanceID("GPU"), To: w.ID, Amount: decimal.NewFromInt(1)},
			currency.Void{Key: "v", Hold: "h"},
		} {
			r, err := currency.Apply(ctx, s, op)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
		return s.flush(ctx)
	})
	require.NoError(t, err)
	for _, r := range rs {
		require.Nil(t, r.Err)
	}
	b, err := l.Balance(ctx, w.ID)
	require.NoError(t, err)
	assert.True(t, b.Available.Equal(decimal.NewFromInt(11)), "%s", b.Available)
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}
