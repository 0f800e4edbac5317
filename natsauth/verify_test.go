package natsauth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/natsauth"
)

// debianMarket makes a market's keys for alice and bob, and runs Debian's
// nats-server (the one the README installs) on the configuration Init
// wrote, with args after it, as an operator would.
func debianMarket(t *testing.T, o natsauth.Options, args ...string) (dir string, ns *natstest.Binary, url string) {
	t.Helper()
	bin := natstest.DebianNATS(t)
	dir = t.TempDir()
	o.Port = natstest.FreePort(t)
	o.Sync = natsauth.SyncDefault // nats-server 2.9 takes no sync_interval
	_, err := natsauth.Init(dir, o)
	require.NoError(t, err)
	for _, id := range []string{"alice", "bob"} {
		_, err := natsauth.User(dir, natsauth.RoleClient, id, natsauth.UserOptions{})
		require.NoError(t, err)
	}
	ns = natstest.RunBinary(t, bin, append([]string{"-c", filepath.Join(dir, "nats-server.conf")}, args...)...)
	return dir, ns, fmt.Sprintf("nats://127.0.0.1:%d", o.Port)
}

func verify(dir, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return natsauth.Verify(ctx, dir, url)
}

func connectTo(url, creds string) (*nats.Conn, error) {
	return nats.Connect(url, nats.UserCredentials(creds), nats.NoReconnect())
}

// TestVerifyDebian: on Debian's nats-server 2.9, with the JetStream store
// in the configuration Init writes, a reload takes a revocation and a
// rotation; Verify says the server has not taken either until it
// reloads, and has after.
func TestVerifyDebian(t *testing.T) {
	dir, ns, url := debianMarket(t, natsauth.Options{StoreDir: t.TempDir()})
	require.NoError(t, verify(dir, url), "nothing revoked yet")
	alice := keep(t, filepath.Join(dir, "alice.creds"))
	nc, err := connectTo(url, alice)
	require.NoError(t, err)
	defer nc.Close()

	require.NoError(t, natsauth.Revoke(dir, "alice"))
	assert.ErrorIs(t, verify(dir, url), natsauth.ErrNotTaken, "not reloaded yet")
	require.Empty(t, ns.Reload(), "nats-server 2.9 reloads a configuration that names its store")
	require.NoError(t, verify(dir, url))
	closed(t, nc, "alice's connection is closed")
	_, err = connectTo(url, alice)
	assert.ErrorIs(t, err, nats.ErrAuthorization, "alice is refused")

	oldBob := keep(t, filepath.Join(dir, "bob.creds"))
	newBob, err := natsauth.Rotate(dir, "bob", natsauth.UserOptions{})
	require.NoError(t, err)
	assert.ErrorIs(t, verify(dir, url), natsauth.ErrNotTaken)
	require.Empty(t, ns.Reload())
	require.NoError(t, verify(dir, url))
	_, err = connectTo(url, oldBob)
	assert.ErrorIs(t, err, nats.ErrAuthorization, "bob's old key is refused")
	nc, err = connectTo(url, newBob)
	require.NoError(t, err, "his new one is not")
	nc.Close()
}

// TestVerifyStale is issue 31's operator: Debian's nats-server started
// with the store on the command line (-sd), as the docs once said, fails
// to reload, in its log only, and goes on taking a revoked key. Verify
// says so, and what to do.
func TestVerifyStale(t *testing.T) {
	dir, ns, url := debianMarket(t, natsauth.Options{}, "-sd", t.TempDir())
	alice := keep(t, filepath.Join(dir, "alice.creds"))
	require.NoError(t, natsauth.Revoke(dir, "alice"))
	assert.Contains(t, ns.Reload(), "jetstream storage dir", "nats-server 2.9 cannot reload a store given with -sd")
	nc, err := connectTo(url, alice)
	require.NoError(t, err, "so alice still connects")
	nc.Close()
	err = verify(dir, url)
	require.ErrorIs(t, err, natsauth.ErrNotTaken)
	assert.ErrorContains(t, err, "-sd")
	assert.ErrorContains(t, err, "store_dir")
}

// TestVerifyWrongServer: no NATS server, one of another operator, and
// one that takes anybody are none of them taken for one that took the
// account.
func TestVerifyWrongServer(t *testing.T) {
	dir := t.TempDir()
	_, err := natsauth.Init(dir, natsauth.Options{})
	require.NoError(t, err)
	_, err = natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	require.NoError(t, err)
	_, statErr := os.Stat(filepath.Join(dir, natsauth.Probe))
	require.ErrorIs(t, statErr, os.ErrNotExist, "init signs the account once: no probe yet")
	require.NoError(t, natsauth.Revoke(dir, "alice"))

	err = verify(dir, fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePort(t)))
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "nothing listens: %v", err)

	otherDir, other, _ := operatorMarket(t)
	require.NotEqual(t, dir, otherDir)
	err = verify(dir, other.ClientURL())
	require.Error(t, err, "another operator's server")
	assert.NotErrorIs(t, err, natsauth.ErrNotTaken)
	assert.ErrorContains(t, err, "refuses the market's account altogether")

	err = verify(dir, natstest.Start(t).ClientURL())
	assert.ErrorIs(t, err, natsauth.ErrNotTaken, "a server without users takes revoked keys too")
}
