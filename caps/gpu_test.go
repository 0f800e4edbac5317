package caps_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// SetGPUs mints or burns a cap's wallet by the difference from the cap
// read in the transaction, free and held alike, and refuses to take back
// GPUs that contracts hold.
func TestSetGPUs(t *testing.T) {
	f := newFixture(t)
	w, err := caps.OpenGPUWallet(f.ctx, f.l, "alice")
	require.NoError(t, err)
	require.Equal(t, caps.GPUWallet("alice"), w)
	set := func(gpus int, key string) (caps.GPUChange, error) {
		var ch caps.GPUChange
		_, err := f.tx(func(ctx context.Context, tx currency.TxReader) ([]currency.Op, error) {
			var err error
			ch, err = caps.SetGPUs(ctx, tx, "alice", gpus, key)
			return ch.Ops, err
		})
		return ch, err
	}

	ch, err := set(4, "k1")
	require.NoError(t, err)
	assert.Equal(t, "0", ch.Cap.String())
	assert.Equal(t, []currency.Op{currency.Transfer{Key: "k1", From: currency.IssuanceID(caps.GPUCode), To: w, Amount: dectest.D("4"), Memo: "cap of alice set to 4 GPUs"}}, ch.Ops)
	f.do(currency.Reserve{Key: "r1", Hold: "gpus/c1", From: w, Amount: dectest.D("3"), Deadline: f.now.Add(time.Hour)})

	t.Run("BelowInUse", func(t *testing.T) {
		_, err := set(2, "k2")
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "%v", err)
		assert.Contains(t, err.Error(), "alice holds 3 GPUs in contracts now: a cap of 2 waits until they end")
		avail, held := f.balance(w)
		assert.Equal(t, []string{"1", "3"}, []string{avail, held}, "nothing moved")
	})
	t.Run("DownToInUse", func(t *testing.T) {
		ch, err := set(3, "k3")
		require.NoError(t, err)
		assert.Equal(t, "4", ch.Cap.String(), "free and held")
		assert.Equal(t, "3", ch.InUse.String())
		assert.Equal(t, []currency.Op{currency.Transfer{Key: "k3", From: w, To: currency.IssuanceID(caps.GPUCode), Amount: dectest.D("1"), Memo: "cap of alice set to 3 GPUs"}}, ch.Ops)
		avail, held := f.balance(w)
		assert.Equal(t, []string{"0", "3"}, []string{avail, held})
	})
	t.Run("Unchanged", func(t *testing.T) {
		ch, err := set(3, "k4")
		require.NoError(t, err)
		assert.Empty(t, ch.Ops)
	})
	f.audit()
}
