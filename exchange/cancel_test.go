package exchange_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
)

// TestCancel: an administrator's cancel, made through the store alone
// (bourse admin cancel), stops a running contract as its client's kill
// does: the sweep settles it, killed, once the grace has passed, and
// tells its server, whose job then ends; a second cancel changes nothing.
func TestCancel(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		node := h.Server("gpu1", "H100", 2, nil)
		h.Wallet("erin", "100")
		tm := job(1, "0.01")
		tm.Job.Profile.Duration, tm.TimeLimit = 10*time.Minute, 20*time.Minute
		tm.Prepayment = tm.CappedPrepayment(2)
		reply := offer(t, h, "erin", "w1", tm, 0)
		require.NotNil(t, reply.Contract)
		id := reply.Contract.ID
		h.Run(5*time.Second, time.Second)
		require.Equal(t, contract.StateRunning, contractOf(t, h, "erin", id).State)

		c, err := exchange.Cancel(ctx, h.Store, id, h.Now(), 3*time.Second)
		require.NoError(t, err)
		require.NotNil(t, c.Stop)
		assert.Equal(t, contract.ReasonKilled, c.Stop.Reason)
		again, err := exchange.Cancel(ctx, h.Store, id, h.Now().Add(time.Second), 3*time.Second)
		require.NoError(t, err)
		assert.Equal(t, c.Stop.At, again.Stop.At, "asked once")

		h.Run(5*time.Second, time.Second)
		c = contractOf(t, h, "erin", id)
		require.Equal(t, contract.StateSettled, c.State)
		assert.Equal(t, contract.ReasonKilled, c.Reason)
		h.Run(3*time.Second, time.Second) // the server hears the kill, and its job ends
		assert.False(t, slices.Contains(node.Hello(h.Now()).Running, id), "its server stopped the job")
		h.Audit()
	})
}
