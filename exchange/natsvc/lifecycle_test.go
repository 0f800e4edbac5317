package natsvc_test

import (
	"context"
	"slices"
	"sync/atomic"
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

func TestOfferEscrowSettle(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 4, accept)
	alice := m.client("alice")
	ctx := context.Background()
	events, err := alice.Events(ctx, 64)
	require.NoError(t, err)

	reply, err := alice.Offer(ctx, "job-1", terms("alice"))
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := *reply.Contract
	assert.Equal(t, "gpu1", c.Server)
	assert.Equal(t, contract.StateAccepted, c.State, "the answer comes with the escrow; the start follows")
	st := <-srv.starts
	assert.Equal(t, c.ID, st.Contract.ID)
	waitFor(t, "the start", func() bool {
		got, err := alice.Contract(ctx, c.ID)
		return err == nil && got.State == contract.StateRunning && slices.Equal(got.GPUs, []int{0})
	})
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Available.Equal(dectest.D("94")))
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.Equal(dectest.D("6")))

	t.Run("RetriedOfferEscrowsOnce", func(t *testing.T) {
		again, err := alice.Offer(ctx, "job-1", terms("alice"))
		require.NoError(t, err)
		require.NotNil(t, again.Contract)
		assert.Equal(t, c.ID, again.Contract.ID)
		assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.Equal(dectest.D("6")))
	})

	// Readings: in order, a duplicate (same msg id), a stale one, then final.
	srv.publish(reading(c.ID, 1, "10", 10, false))
	srv.publish(reading(c.ID, 1, "10", 10, false))
	srv.publish(reading(c.ID, 3, "200", 250, false))
	srv.publish(reading(c.ID, 2, "20", 20, false)) // stale: 3 counted already
	final := reading(c.ID, 4, "240", 300, true)
	srv.publish(final)
	waitFor(t, "settlement", func() bool {
		got, err := alice.Contract(ctx, c.ID)
		return err == nil && got.State == contract.StateSettled
	})
	got, err := alice.Contract(ctx, c.ID)
	require.NoError(t, err)
	want, err := contract.Charge(got.Terms, final.Usage(), 2)
	require.NoError(t, err)
	assert.True(t, want.Charge.Equal(dectest.D("2.4")), "240 GPU-s at 0.01")
	assert.True(t, got.Charge.Equal(want.Charge), "charge %s, want %s", got.Charge, want.Charge)
	assert.True(t, got.Refund.Equal(dectest.D("3.6")))
	assert.Equal(t, contract.ReasonCompleted, got.Reason)
	assert.Equal(t, uint64(4), got.Reading.Seq)
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Available.Equal(dectest.D("97.6")))
	assert.True(t, m.balance(currency.RevenueID(cred, "gpu1")).Available.Equal(dectest.D("2.4")))

	// A reading after settlement changes nothing.
	srv.publish(reading(c.ID, 5, "999", 400, true))
	time.Sleep(100 * time.Millisecond)
	assert.True(t, m.balance(currency.RevenueID(cred, "gpu1")).Available.Equal(dectest.D("2.4")))

	var types []protocol.EventType
	timeout := time.After(2 * time.Second)
collect:
	for {
		select {
		case ev := <-events:
			types = append(types, ev.Type)
			// Only the accept carries the terms; the rest carry what changed.
			assert.Equal(t, ev.Type == protocol.EventAccepted, !ev.Contract.Terms.IsZero(), "%s event's terms", ev.Type)
			if ev.Type == protocol.EventAccepted {
				assert.True(t, ev.Contract.Terms.Equal(c.Terms), "the accepted event's terms")
			}
			if ev.Type == protocol.EventSettled {
				assert.True(t, ev.Contract.Charge.Equal(dectest.D("2.4")), "the settled event's charge")
				break collect
			}
		case <-timeout:
			break collect
		}
	}
	assert.Contains(t, types, protocol.EventAccepted)
	assert.Contains(t, types, protocol.EventReading)
	assert.Equal(t, protocol.EventSettled, types[len(types)-1])
	m.audit()
}

func TestCounterOffers(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("bob", "100")
	reserve := contract.Flat(dectest.D("0.02"))
	var taken atomic.Bool
	m.scriptedServer("gpu1", 2, func(o protocol.ServerOffer) protocol.Decision {
		if o.Counter == "k1" {
			if taken.Load() {
				return protocol.Decision{Reason: "gone", Code: bourse.ECapacityGone}
			}
			return accept(o)
		}
		ct := o.Terms
		ct.P = reserve
		return protocol.Decision{Reason: "below reserve", Counters: []contract.Counter{{ID: "k1", Terms: ct, ValidUntil: time.Now().Add(time.Minute)}}}
	})
	m.scriptedServer("gpu2", 2, func(protocol.ServerOffer) protocol.Decision {
		return protocol.Decision{Reason: "closed for maintenance"}
	})
	bob := m.client("bob")
	ctx := context.Background()
	reply, err := bob.Offer(ctx, "o1", terms("bob"))
	require.NoError(t, err)
	assert.Nil(t, reply.Contract)
	require.Len(t, reply.Counters, 1)
	k := reply.Counters[0]
	assert.Equal(t, "gpu1", k.Server)
	assert.True(t, k.Terms.P.Equal(reserve))
	require.Len(t, reply.Rejections, 1)
	assert.Equal(t, "gpu2", reply.Rejections[0].Server)
	assert.True(t, m.balance(currency.WalletID(cred, "bob")).Held.IsZero(), "no escrow for counters")

	taken.Store(true)
	_, err = bob.Take(ctx, "o2", k)
	assert.Equal(t, bourse.ECapacityGone, bourse.ErrorCode(err), "%v", err)

	taken.Store(false)
	got, err := bob.Take(ctx, "o3", k)
	require.NoError(t, err)
	require.NotNil(t, got.Contract)
	assert.Equal(t, "gpu1", got.Contract.Server)
	assert.True(t, got.Contract.Terms.P.Equal(reserve))
	m.audit()
}

func TestKillAndSuspend(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("carol", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	carol := m.client("carol")
	ctx := context.Background()
	reply, err := carol.Offer(ctx, "k1", terms("carol"))
	require.NoError(t, err)
	id := reply.Contract.ID

	t.Run("OtherClientsCannotSee", func(t *testing.T) {
		m.wallet("mallory", "1")
		mallory := m.client("mallory")
		_, err := mallory.Kill(ctx, id)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		_, err = mallory.Contract(ctx, id)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		cs, err := mallory.Contracts(ctx, 10)
		require.NoError(t, err)
		assert.Empty(t, cs)
	})

	waitFor(t, "the start", func() bool {
		c, err := carol.Contract(ctx, id)
		return err == nil && c.State == contract.StateRunning
	})
	_, err = carol.Suspend(ctx, id)
	require.NoError(t, err)
	ctl := <-srv.ctrl
	assert.Equal(t, protocol.Control{Contract: id, Action: contract.ReasonSuspended}, ctl)
	r := reading(id, 1, "5", 5, true)
	r.Reason = contract.ReasonSuspended
	srv.publish(r)
	waitFor(t, "suspension settles", func() bool {
		c, err := carol.Contract(ctx, id)
		return err == nil && c.State == contract.StateSettled && c.Reason == contract.ReasonSuspended
	})

	t.Run("Resume", func(t *testing.T) {
		again, err := carol.Resume(ctx, "k2", id, terms("carol"))
		require.NoError(t, err)
		require.NotNil(t, again.Contract)
		assert.Equal(t, id, again.Contract.Resumes)
		_, err = carol.Resume(ctx, "k3", again.Contract.ID, terms("carol"))
		assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "a running contract cannot be resumed")
	})
	cs, err := carol.Contracts(ctx, 10)
	require.NoError(t, err)
	assert.Len(t, cs, 2)
	m.audit()
}

// The watchdog's and bookings' rules (TestWatchdog, TestBooking) are
// tested on a manual clock without NATS, in exchange/rules_test.go.
