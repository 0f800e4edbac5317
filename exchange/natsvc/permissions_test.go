package natsvc_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestShippedPermissions starts a NATS server with docs/nats-server.conf and
// checks that a client cannot publish under another's prefix nor read
// another's deliveries, while its own requests get through.
func TestShippedPermissions(t *testing.T) {
	ns := natstest.StartShipped(t, nil)

	var mu sync.Mutex
	var violations []string
	alice := natstest.Connect(t, ns, protocol.InboxPrefix("alice"), nats.UserInfo("alice", "alice-secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, err.Error())
		}))
	bob := natstest.Connect(t, ns, protocol.InboxPrefix("bob"), nats.UserInfo("bob", "bob-secret"))
	exch := natstest.Connect(t, ns, "", nats.UserInfo("exchange", "exchange-secret"))

	got := make(chan string, 4)
	_, err := exch.Subscribe(protocol.Prefix+".client.*.offer", func(m *nats.Msg) {
		got <- m.Subject
		_ = m.Respond([]byte(`{}`))
	})
	require.NoError(t, err)
	require.NoError(t, exch.Flush())

	t.Run("OwnPrefixAllowed", func(t *testing.T) {
		_, err := alice.Request(protocol.ClientSubject("alice", protocol.VerbOffer), []byte(`{}`), 2*time.Second)
		require.NoError(t, err)
		assert.Equal(t, protocol.ClientSubject("alice", protocol.VerbOffer), <-got)
	})
	t.Run("OtherPrefixRefused", func(t *testing.T) {
		require.NoError(t, alice.Publish(protocol.ClientSubject("bob", protocol.VerbOffer), []byte(`{}`)))
		_ = alice.Flush()
		select {
		case s := <-got:
			t.Fatalf("the exchange received %s from alice", s)
		case <-time.After(300 * time.Millisecond):
		}
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, violations)
		assert.Contains(t, violations[0], "Permissions Violation for Publish")
	})
	t.Run("OtherDeliveriesRefused", func(t *testing.T) {
		sub, err := alice.SubscribeSync(protocol.DeliverSubject("bob", protocol.DeliverEvent))
		require.NoError(t, err)
		_ = alice.Flush()
		require.NoError(t, exch.Publish(protocol.DeliverSubject("bob", protocol.DeliverEvent), []byte(`{"secret":1}`)))
		_, err = sub.NextMsg(300 * time.Millisecond)
		assert.True(t, errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrPermissionViolation), "%v", err)

		own, err := bob.SubscribeSync(protocol.DeliverSubject("bob", protocol.DeliverEvent))
		require.NoError(t, err)
		_ = bob.Flush()
		require.NoError(t, exch.Publish(protocol.DeliverSubject("bob", protocol.DeliverEvent), []byte(`{}`)))
		_, err = own.NextMsg(2 * time.Second)
		assert.NoError(t, err, "bob reads his own deliveries")
	})
	t.Run("MarketDataPublic", func(t *testing.T) {
		gpu1 := natstest.Connect(t, ns, protocol.InboxPrefix("gpu1"), nats.UserInfo("gpu1", "gpu1-secret"))
		var subs []*nats.Subscription
		for _, nc := range []*nats.Conn{alice, bob, gpu1} {
			sub, err := nc.SubscribeSync(protocol.MarketSubject("CRED"))
			require.NoError(t, err)
			require.NoError(t, nc.Flush())
			subs = append(subs, sub)
		}
		// A client's word on the market subject never reaches anyone:
		// only the exchange publishes market data.
		require.NoError(t, bob.Publish(protocol.MarketSubject("CRED"), []byte(`{"currency":"forged"}`)))
		_ = bob.Flush()
		require.NoError(t, exch.Publish(protocol.MarketSubject("CRED"), []byte(`{"currency":"CRED"}`)))
		for i, sub := range subs {
			msg, err := sub.NextMsg(2 * time.Second)
			require.NoError(t, err, "party %d reads the market data", i)
			assert.JSONEq(t, `{"currency":"CRED"}`, string(msg.Data), "party %d got the exchange's, not bob's", i)
		}
	})
}
