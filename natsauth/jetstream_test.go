package natsauth_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/natsauth"
)

// TestJetStreamBlock: the jetstream block the configurations write is
// what nats-server reads it as: every write synced by default, a sync
// interval where one is given, nats-server's own default left alone, the
// store named where it is given; a sync setting that means nothing is
// refused before any file is written.
func TestJetStreamBlock(t *testing.T) {
	parse := func(t *testing.T, block string) *natsserver.Options {
		t.Helper()
		conf := filepath.Join(t.TempDir(), "nats-server.conf")
		require.NoError(t, os.WriteFile(conf, []byte("port: 4222\n"+block), 0o600))
		opts, err := natsserver.ProcessConfigFile(conf)
		require.NoError(t, err, block)
		return opts
	}
	o := parse(t, natsauth.JetStreamBlock("/var/lib/js", ""))
	assert.True(t, o.JetStream)
	assert.True(t, o.SyncAlways, "every write synced unless told otherwise")
	assert.Equal(t, "/var/lib/js", o.StoreDir)

	o = parse(t, natsauth.JetStreamBlock("", "10s"))
	assert.False(t, o.SyncAlways)
	assert.Equal(t, 10*time.Second, o.SyncInterval)

	block := natsauth.JetStreamBlock("", natsauth.SyncDefault)
	assert.Equal(t, "jetstream: enabled\n", block, "what nats-server 2.9 takes")
	o = parse(t, block)
	assert.True(t, o.JetStream)
	assert.False(t, o.SyncAlways)

	for _, bad := range []string{"sometimes", "-1s", "0s", "10"} {
		assert.Error(t, natsauth.CheckSync(bad), bad)
	}
	_, err := natsauth.Init(t.TempDir(), natsauth.Options{Sync: "sometimes"})
	assert.Error(t, err)
}
