package natsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestStandingOffer: over NATS, an offer that no server can take now waits
// in the book, its client told where it stands and nothing held; when the
// running job ends and the agent's heartbeat shows the GPU free, the
// exchange offers it again and the accept makes its contract, which the
// client hears of as an accepted event. A cancel takes another out.
func TestStandingOffer(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.wallet("bob", "100")
	m.agent("gpu1", 1)
	alice, bob := m.client("alice"), m.client("bob")
	ctx := context.Background()
	events, err := bob.Events(ctx, 64)
	require.NoError(t, err)

	short := terms("alice")
	short.Job.Profile.Duration = 2 * time.Second
	first, err := alice.Offer(ctx, "first", short)
	require.NoError(t, err)
	require.NotNil(t, first.Contract)

	q, err := bob.OfferWait(ctx, "standing", terms("bob"), time.Hour)
	require.NoError(t, err)
	require.Nil(t, q.Contract)
	require.NotNil(t, q.Queued, "%+v", q)
	assert.Equal(t, 0, q.Queued.Ahead)
	ws, err := bob.Waiting(ctx, "")
	require.NoError(t, err)
	require.Len(t, ws, 1)
	bal, err := bob.Balance(ctx, cred)
	require.NoError(t, err)
	assert.True(t, bal.Held.IsZero(), "nothing held while it waits")
	require.NotNil(t, bal.Waiting)
	assert.True(t, bal.Waiting.Prepayments.Equal(dectest.D("6")))

	other, err := bob.OfferWait(ctx, "other", terms("bob"), time.Hour)
	require.NoError(t, err)
	require.NotNil(t, other.Queued)
	assert.Equal(t, 1, other.Queued.Ahead, "same price, later")
	left, err := bob.Cancel(ctx, other.Queued.ID)
	require.NoError(t, err)
	assert.Equal(t, contract.LeftCancelled, left.Left)
	_, err = bob.Cancel(ctx, other.Queued.ID)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))

	var got protocol.ContractView
	deadline := time.After(15 * time.Second)
	for got.ID == "" {
		select {
		case ev := <-events:
			if ev.Type == protocol.EventAccepted {
				got.Apply(*ev.Contract)
			}
		case <-deadline:
			t.Fatal("the waiting offer was not matched when gpu1 freed up")
		}
	}
	assert.Equal(t, q.Queued.ID, got.ID, "the contract its request names")
	assert.False(t, got.QueuedAt.IsZero())
	waitFor(t, "bob's contract to settle", func() bool {
		c, err := bob.Contract(ctx, got.ID)
		return err == nil && c.State == contract.StateSettled
	})
	ws, err = bob.Waiting(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, ws)
	b := m.balance(currency.WalletID(cred, "bob"))
	assert.True(t, b.Held.IsZero(), "%+v", b)
	m.audit()
}
