package natsauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/natsauth"
	"github.com/bourse/bourse/protocol"
)

// TestViewer: a viewer's credentials read the market data and nothing
// else: it cannot publish (not even as a client of its own name, so it
// cannot make requests) nor read anyone's deliveries. Its id is a
// viewer's for the life of the operator, also once the registry is
// rebuilt from the folder.
func TestViewer(t *testing.T) {
	dir := t.TempDir()
	_, err := natsauth.Init(dir, natsauth.Options{})
	require.NoError(t, err)
	_, err = natsauth.User(dir, natsauth.RoleViewer, "console", natsauth.UserOptions{})
	require.NoError(t, err)
	opts, err := natsserver.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = natsserver.RANDOM_PORT
	ns := natstest.StartWith(t, opts)

	var mu sync.Mutex
	var violations []string
	viewer := natstest.Connect(t, ns, "", nats.UserCredentials(filepath.Join(dir, "console.creds")),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			mu.Lock()
			defer mu.Unlock()
			violations = append(violations, strings.ToLower(err.Error()))
		}))
	exch := natstest.Connect(t, ns, "", nats.UserCredentials(filepath.Join(dir, "exchange.creds")))

	market, err := viewer.SubscribeSync(protocol.MarketSubjects)
	require.NoError(t, err)
	require.NoError(t, viewer.Flush())
	require.NoError(t, exch.Publish(protocol.MarketSubject("CRED"), []byte(`{}`)))
	_, err = market.NextMsg(2 * time.Second)
	require.NoError(t, err, "the viewer reads the market data")

	require.NoError(t, viewer.Publish(protocol.ClientSubject("console", protocol.VerbOffer), []byte(`{}`)))
	require.NoError(t, viewer.Publish(protocol.MarketSubject("CRED"), []byte(`{}`)))
	_, err = viewer.SubscribeSync(protocol.DeliverSubject("alice", ">"))
	require.NoError(t, err)
	require.NoError(t, viewer.Flush())
	want := []string{
		`publish to "bourse.v1.client.console.offer"`,
		`publish to "bourse.v1.market.cred"`,
		`subscription to "bourse.v1.deliver.alice.>"`,
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		got := strings.Join(violations, "\n")
		for _, w := range want {
			if !strings.Contains(got, w) {
				return false
			}
		}
		return true
	}, 3*time.Second, 20*time.Millisecond, "refused: %v", want)

	_, err = natsauth.User(dir, natsauth.RoleClient, "console", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"console" was issued to the viewer console`)
	require.NoError(t, os.Remove(filepath.Join(dir, natsauth.Registry)))
	_, err = natsauth.User(dir, natsauth.RoleClient, "console", natsauth.UserOptions{})
	assert.ErrorContains(t, err, `"console" was issued to the viewer console`, "read back from its permissions")
}
