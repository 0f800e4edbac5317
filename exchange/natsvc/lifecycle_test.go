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
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
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
	assert.Equal(t, trade.StateAccepted, c.State, "the answer comes with the escrow; the start follows")
	st := <-srv.starts
	assert.Equal(t, c.ID, st.Contract.ID)
	waitFor(t, "the start", func() bool {
		got, err := alice.Contract(ctx, c.ID)
		return err == nil && got.State == trade.StateRunning && slices.Equal(got.GPUs, []int{0})
	})
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Available.Equal(d("94")))
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.Equal(d("6")))

	t.Run("RetriedOfferEscrowsOnce", func(t *testing.T) {
		again, err := alice.Offer(ctx, "job-1", terms("alice"))
		require.NoError(t, err)
		require.NotNil(t, again.Contract)
		assert.Equal(t, c.ID, again.Contract.ID)
		assert.True(t, m.balance(currency.WalletID(cred, "alice")).Held.Equal(d("6")))
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
		return err == nil && got.State == trade.StateSettled
	})
	got, err := alice.Contract(ctx, c.ID)
	require.NoError(t, err)
	want, err := contract.Charge(got.Terms, final.Usage(), 2)
	require.NoError(t, err)
	assert.True(t, want.Charge.Equal(d("2.4")), "240 GPU-s at 0.01")
	assert.True(t, got.Charge.Equal(want.Charge), "charge %s, want %s", got.Charge, want.Charge)
	assert.True(t, got.Refund.Equal(d("3.6")))
	assert.Equal(t, trade.ReasonCompleted, got.Reason)
	assert.Equal(t, uint64(4), got.Reading.Seq)
	assert.True(t, m.balance(currency.WalletID(cred, "alice")).Available.Equal(d("97.6")))
	assert.True(t, m.balance(currency.RevenueID(cred, "gpu1")).Available.Equal(d("2.4")))

	// A reading after settlement changes nothing.
	srv.publish(reading(c.ID, 5, "999", 400, true))
	time.Sleep(100 * time.Millisecond)
	assert.True(t, m.balance(currency.RevenueID(cred, "gpu1")).Available.Equal(d("2.4")))

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
				assert.True(t, ev.Contract.Charge.Equal(d("2.4")), "the settled event's charge")
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
	reserve := contract.Flat(d("0.02"))
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
		return protocol.Decision{Reason: "below reserve", Counters: []trade.Counter{{ID: "k1", Terms: ct, ValidUntil: time.Now().Add(time.Minute)}}}
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
		return err == nil && c.State == trade.StateRunning
	})
	_, err = carol.Suspend(ctx, id)
	require.NoError(t, err)
	ctl := <-srv.ctrl
	assert.Equal(t, protocol.Control{Contract: id, Action: trade.ReasonSuspended}, ctl)
	r := reading(id, 1, "5", 5, true)
	r.Reason = trade.ReasonSuspended
	srv.publish(r)
	waitFor(t, "suspension settles", func() bool {
		c, err := carol.Contract(ctx, id)
		return err == nil && c.State == trade.StateSettled && c.Reason == trade.ReasonSuspended
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

func TestWatchdog(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) {
		c.ServerLostAfter = 300 * time.Millisecond
		c.StartTimeout = 300 * time.Millisecond
	})
	m.wallet("dave", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	dave := m.client("dave")
	ctx := context.Background()

	reply, err := dave.Offer(ctx, "w1", terms("dave"))
	require.NoError(t, err)
	id := reply.Contract.ID
	srv.publish(reading(id, 1, "30", 30, false))
	waitFor(t, "server-lost settlement", func() bool {
		c, err := dave.Contract(ctx, id)
		return err == nil && c.State == trade.StateSettled
	})
	c, err := dave.Contract(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, trade.ReasonServerLost, c.Reason)
	assert.True(t, c.Charge.Equal(d("0.3")), "settled on the last reading: %s", c.Charge)

	// A server that accepts but never starts the job nor reports.
	mute := m.scriptedServer("gpu9", 2, accept)
	mute.muteStarts.Store(true)
	t9 := terms("dave")
	t9.Server = "gpu9"
	reply, err = dave.Offer(ctx, "w2", t9)
	require.NoError(t, err)
	assert.Equal(t, trade.StateAccepted, reply.Contract.State)
	time.Sleep(100 * time.Millisecond)
	c, err = dave.Contract(ctx, reply.Contract.ID)
	require.NoError(t, err)
	assert.Equal(t, trade.StateAccepted, c.State, "no start confirmed")
	waitFor(t, "void of a contract never started", func() bool {
		c, err := dave.Contract(ctx, reply.Contract.ID)
		return err == nil && c.State == trade.StateVoided
	})
	c, err = dave.Contract(ctx, reply.Contract.ID)
	require.NoError(t, err)
	assert.Equal(t, trade.ReasonNotStarted, c.Reason)
	assert.True(t, c.Refund.Equal(c.Terms.Prepayment))
	assert.True(t, m.balance(currency.WalletID(cred, "dave")).Held.IsZero())
	assert.True(t, m.balance(currency.WalletID(cred, "dave")).Available.Equal(d("99.7")))
	m.audit()
}

// TestBooking: an offer with a future start_at is a booking. The exchange
// escrows at once, leaves the contract accepted until the server reports
// the start, and neither voids nor loses it before start_at plus the usual
// deadlines.
func TestBooking(t *testing.T) {
	const timeout = 300 * time.Millisecond
	m := newMarket(t, func(c *exchange.Config) {
		c.ServerLostAfter, c.StartTimeout, c.SweepEvery = timeout, timeout, 20*time.Millisecond
		c.MaxBookAhead = time.Hour
	})
	m.wallet("erin", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	srv.books.Store(true)
	erin := m.client("erin")
	ctx := context.Background()

	t.Run("StartAtBounds", func(t *testing.T) {
		for name, at := range map[string]time.Time{
			"passed":  time.Now().Add(-2 * time.Minute),
			"too-far": time.Now().Add(2 * time.Hour),
		} {
			tm := terms("erin")
			tm.StartAt = at
			_, err := erin.Offer(ctx, "bad-"+name, tm)
			var e *bourse.Error
			require.ErrorAs(t, err, &e, name)
			assert.Equal(t, bourse.EInvalidOffer, e.Code, "%s: %v", name, err)
			assert.Equal(t, "terms.start_at", e.Field, name)
		}
	})

	tm := terms("erin")
	tm.StartAt = time.Now().Add(4 * timeout).Truncate(time.Millisecond).UTC()
	reply, err := erin.Offer(ctx, "book-1", tm)
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := *reply.Contract
	assert.True(t, c.StartDeadline.Equal(tm.StartAt.Add(timeout)), "start deadline %v, start %v", c.StartDeadline, tm.StartAt)
	st := <-srv.starts
	assert.True(t, st.Contract.Terms.StartAt.Equal(tm.StartAt), "the start request carries start_at")
	assert.True(t, m.balance(currency.WalletID(cred, "erin")).Held.Equal(d("6")), "escrowed at once")

	// Past StartTimeout and ServerLostAfter from now, but before start_at.
	time.Sleep(3 * timeout)
	got, err := erin.Contract(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, trade.StateAccepted, got.State, "booked, not started: %s", got.Reason)

	time.Sleep(time.Until(tm.StartAt))
	got = srv.started(protocol.Started{Contract: c.ID, GPUs: []int{0}, At: time.Now().UTC(), Meter: trade.MeterFullUse})
	assert.Equal(t, trade.StateRunning, got.State)
	assert.Equal(t, trade.MeterFullUse, got.Meter, "the contract records how the server measures it")
	srv.publish(reading(c.ID, 1, "1", 1, true))
	waitFor(t, "settlement", func() bool {
		got, err := erin.Contract(ctx, c.ID)
		return err == nil && got.State == trade.StateSettled && got.Reason == trade.ReasonCompleted
	})

	t.Run("NeverStarted", func(t *testing.T) {
		srv := m.scriptedServer("gpu2", 2, accept) // gpu1 has no heartbeat: lost by now
		srv.books.Store(true)
		tm := terms("erin")
		tm.StartAt = time.Now().Add(2 * timeout).UTC()
		reply, err := erin.Offer(ctx, "book-2", tm)
		require.NoError(t, err)
		id := reply.Contract.ID
		<-srv.starts
		time.Sleep(2*timeout + timeout/2) // past start_at, not its deadline
		got, err := erin.Contract(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, trade.StateAccepted, got.State)
		waitFor(t, "void", func() bool {
			got, err := erin.Contract(ctx, id)
			return err == nil && got.State == trade.StateVoided
		})
		select {
		case ctl := <-srv.ctrl:
			assert.Equal(t, id, ctl.Contract, "the server is told to drop the booking")
		case <-time.After(2 * time.Second):
			t.Error("no control for the voided booking")
		}
	})
	assert.True(t, m.balance(currency.WalletID(cred, "erin")).Held.IsZero())
	m.audit()
}

// TestNoServerYet: an exchange that has heard from no server says so,
// rather than suggesting other terms that would fare no better.
func TestNoServerYet(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("erin", "100")
	_, err := m.client("erin").Offer(context.Background(), "early", terms("erin"))
	var e *bourse.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bourse.ENoMatch, e.Code)
	assert.Contains(t, e.Message, "no server has registered")
	assert.Empty(t, e.Field, "not a matter of the terms")

	m.scriptedServer("gpu1", 1, accept)
	tm := terms("erin")
	tm.GPUs = 2
	_, err = m.client("erin").Offer(context.Background(), "too-big", tm)
	require.ErrorAs(t, err, &e)
	assert.Equal(t, bourse.ENoMatch, e.Code)
	assert.Equal(t, "terms.gpus", e.Field)

	// Models match without case, as on the servers.
	tm.GPUs, tm.Class.Model = 1, "h100"
	reply, err := m.client("erin").Offer(context.Background(), "lower-case", tm)
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "h100 is routed to an H100 server")
}
