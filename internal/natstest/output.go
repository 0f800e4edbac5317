package natstest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/protocol"
)

// OutputRefused connects as party, who is not owner, and checks that NATS
// refuses it every way to owner's job's output (contract id, run by
// server) but the exchange's answer: requests on owner's subjects, the
// servers' output subjects, owner's deliveries and the JetStream API of
// the server's output stream. Both configurations the project writes (bourse admin
// nats-config, nats-auth) are held to it.
func OutputRefused(t *testing.T, url, party, owner, server, id string, as nats.Option) {
	t.Helper()
	nc, refused := violations(t, url, party, as)
	t.Run("OwnersSubject", func(t *testing.T) {
		_, err := nc.Request(protocol.ClientSubject(owner, protocol.VerbLogs), []byte(`{"contract":"`+id+`"}`), 500*time.Millisecond)
		assert.Error(t, err, "an answer to a request on %s's subject", owner)
		refused(t, "Publish")
	})
	for _, subject := range []string{
		protocol.OutputSubject("*", id, ">"),
		protocol.OutputSubjects,
		protocol.DeliverSubject(owner, ">"),
	} {
		t.Run("Subscribe "+subject, func(t *testing.T) {
			sub, err := nc.SubscribeSync(subject)
			require.NoError(t, err)
			defer sub.Unsubscribe()
			refused(t, `Subscription to "`+subject+`"`)
		})
	}
	t.Run("JetStreamAPI", func(t *testing.T) {
		stream := protocol.OutputStreamOf(server)
		for _, api := range []string{"$JS.API.STREAM.INFO." + stream, "$JS.API.DIRECT.GET." + stream,
			"$JS.API.STREAM.MSG.GET." + stream, "$JS.API.CONSUMER.CREATE." + stream} {
			_, err := nc.Request(api, []byte(`{"seq":1}`), 500*time.Millisecond)
			assert.True(t, err != nil && !errors.Is(err, context.Canceled), "%s answered", api)
		}
		refused(t, `Publish to "$JS.API`)
	})
}

// violations connects as party and returns the connection and refused,
// which waits for NATS to report a permissions violation of what
// ("Publish", `Subscription to "x"`) on it, and fails the test if none
// comes.
func violations(t *testing.T, url, party string, as nats.Option) (*nats.Conn, func(t *testing.T, what string)) {
	t.Helper()
	var mu sync.Mutex
	var seen []string
	nc, err := nats.Connect(url, as, nats.CustomInboxPrefix(protocol.InboxPrefix(party)),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, err.Error())
		}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc, func(t *testing.T, what string) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			got := append([]string(nil), seen...)
			mu.Unlock()
			for _, v := range got {
				if strings.Contains(v, "Permissions Violation for "+what) {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("NATS did not refuse the %s: %v", what, got)
			}
		}
	}
}
