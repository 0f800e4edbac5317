package market_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
)

// TestStaleDefaultStore leaves what a `nats-server -js` run without -sd
// leaves: a file-stored BOURSE_USAGE stream in NATS's default store under
// the system's temporary folder. The demo's market keeps its stream in
// memory, so reading that store would stop its exchange ("can not change
// storage type"); it must start anyway, trade, leave the other store
// alone and remove the one it made.
func TestStaleDefaultStore(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // the default store is $TMPDIR/nats/jetstream
	stale := filepath.Join(tmp, "nats", "jetstream")
	leaveStaleStream(t)
	require.DirExists(t, stale, "the other server used the default store")

	m := markettest.Start(t, market.Config{JobScale: 0.4}) // fails if the market read another server's store
	ours := marketStores(t, tmp)
	assert.Len(t, ours, 1, "the embedded server has one store of its own under $TMPDIR")
	time.Sleep(2 * time.Second)
	m.Close()
	assert.Positive(t, m.Tally.Snapshot().SettledTotal(), "the market traded")
	assert.Empty(t, marketStores(t, tmp), "Stop leaves the market's store behind")
	assert.DirExists(t, filepath.Join(stale, "$G", "streams", protocol.UsageStream), "the other server's stream was touched")
}

// leaveStaleStream runs a NATS server with JetStream and no store
// directory, creates a file-stored usage stream on it and shuts it down.
func leaveStaleStream(t *testing.T) {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: natsserver.RANDOM_PORT, JetStream: true, NoSigs: true, NoLog: true})
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second))
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	nc, err := nats.Connect(ns.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: protocol.UsageStream,
		Subjects: []string{protocol.UsageSubjects}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
}

// marketStores lists the embedded servers' store directories under dir.
func marketStores(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "bourse-nats-*"))
	require.NoError(t, err)
	return found
}
