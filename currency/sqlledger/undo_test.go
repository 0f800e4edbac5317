package sqlledger

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// Undo takes back, in memory, every write since its mark: operations that
// went through (a hold made, a transfer, their entries and results), one
// that failed (its failure's result), and statements queued; what came
// before the mark and after the undo commits, and the keys undone are
// unspent.
func TestTxUndo(t *testing.T) {
	l, a := txFixture(t)
	ctx := context.Background()
	b := currency.WalletID("GPU", "b")
	before := currency.Transfer{Key: "before", From: a, To: b, Amount: decimal.NewFromInt(10)}
	hold := currency.Reserve{Key: "hold", Hold: "h1", From: a, Amount: decimal.NewFromInt(20), Deadline: time.Now().Add(time.Hour)}
	moved := currency.Transfer{Key: "moved", From: a, To: b, Amount: decimal.NewFromInt(5)}
	failed := currency.Transfer{Key: "failed", From: b, To: a, Amount: decimal.NewFromInt(1000)}
	after := currency.Transfer{Key: "after", From: b, To: a, Amount: decimal.NewFromInt(1)}
	var undone []currency.Result
	err := l.Tx(ctx, func(ctx context.Context, x *Tx) error {
		if _, err := x.Apply(ctx, before); err != nil {
			return err
		}
		m := x.Mark()
		var err error
		if undone, err = x.Apply(ctx, hold, moved, failed); err != nil {
			return err
		}
		x.Queue(`INSERT INTO notes VALUES ('undone', 1)`)
		x.Undo(m)
		_, err = x.Apply(ctx, after)
		return err
	})
	require.NoError(t, err)
	require.Len(t, undone, 3)
	require.Nil(t, undone[0].Err)
	require.Nil(t, undone[1].Err)
	require.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(undone[2].Err))

	assert.Equal(t, "91", available(t, l, a)) // 100 - 10 + 1
	assert.Equal(t, "9", available(t, l, b))
	_, err = l.Hold(ctx, "h1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "the hold was undone")
	_, found := note(t, l, "undone")
	assert.False(t, found, "the queued statement was undone")
	st, err := l.Statement(ctx, a, 0, 10)
	require.NoError(t, err)
	var keys []string
	for i, e := range st {
		assert.Equal(t, int64(i+1), e.Seq, "entries numbered without gaps")
		keys = append(keys, e.Key)
	}
	assert.Equal(t, []string{"mint", "before", "after"}, keys)

	// The undone keys are unspent: the same operations go through now.
	for _, op := range []currency.Op{hold, moved} {
		r, err := l.Apply(ctx, op)
		require.NoError(t, err)
		assert.Nil(t, r[0].Err, op.IdempotencyKey())
	}
	assert.Equal(t, "66", available(t, l, a))
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
}
