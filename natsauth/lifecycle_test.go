package natsauth_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/natsauth"
	"github.com/bourse/bourse/signing"
)

// reload has ns read the folder's nats-server.conf again, as
// nats-server --signal reload does, keeping the port and store the test
// gave it.
func reload(t *testing.T, ns *natsserver.Server, dir string) {
	t.Helper()
	opts, err := natsserver.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = ns.Addr().(*net.TCPAddr).Port
	opts.StoreDir, opts.JetStream, opts.NoSigs = filepath.Dir(ns.StoreDir()), true, true // StoreDir() ends in jetstream/
	require.NoError(t, ns.ReloadOptions(opts))
}

// refused says whether credentials file creds is turned away by ns.
func refused(t *testing.T, ns *natsserver.Server, creds string) error {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(creds), nats.NoReconnect())
	if err == nil {
		nc.Close()
	}
	return err
}

// keep copies a credentials file aside, as a party that holds it would.
func keep(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	kept := filepath.Join(t.TempDir(), filepath.Base(path))
	require.NoError(t, os.WriteFile(kept, b, 0o600))
	return kept
}

// closed waits for nc to be closed by its server.
func closed(t *testing.T, nc *nats.Conn, why string) {
	t.Helper()
	require.Eventually(t, func() bool { return nc.IsClosed() || !nc.IsConnected() }, 5*time.Second, 20*time.Millisecond, why)
}

// TestRevokedUserRefused: a revoked party is refused by a real
// nats-server in operator mode once it reloads its configuration, and its
// open connection is closed; the other parties go on.
func TestRevokedUserRefused(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	alice := keep(t, filepath.Join(dir, "alice.creds"))
	nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(alice), nats.NoReconnect())
	require.NoError(t, err)
	defer nc.Close()

	require.NoError(t, natsauth.Revoke(dir, "alice"))
	assert.NoFileExists(t, filepath.Join(dir, "alice.creds"))
	assert.NoError(t, refused(t, ns, alice), "nats-server has not learnt of it yet")
	assert.ErrorIs(t, verify(dir, ns.ClientURL()), natsauth.ErrNotTaken, "and Verify says so")
	reload(t, ns, dir)
	assert.NoError(t, verify(dir, ns.ClientURL()), "it has now")

	closed(t, nc, "alice's connection is closed")
	err = refused(t, ns, alice)
	require.Error(t, err, "alice is refused")
	assert.Contains(t, strings.ToLower(err.Error()), "authorization violation")
	assert.NoError(t, refused(t, ns, filepath.Join(dir, "bob.creds")), "bob is not")

	assert.ErrorContains(t, natsauth.Revoke(dir, "alice"), "no key that is not revoked")
	assert.ErrorContains(t, natsauth.Revoke(dir, "carol"), "never issued")
	_, err = natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "rotate", "a revoked id stays alice's")

	es, err := natsauth.List(dir)
	require.NoError(t, err)
	for _, e := range es {
		assert.Equal(t, e.ID == "alice", !e.Revoked.IsZero(), "%s", e.ID)
	}
}

// TestRotate: a server's rotated key replaces its old one in server-keys
// (one key each: the exchange still starts) and verifies after the
// exchange reads the file again; its old credentials are refused once
// nats-server reloads, its new ones connect.
func TestRotate(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	keys, err := signing.OpenKeyFile(filepath.Join(dir, natsauth.ServerKeys))
	require.NoError(t, err)
	oldCreds := keep(t, filepath.Join(dir, "gpu1.creds"))
	oldSigner, err := signing.LoadSigner(oldCreds)
	require.NoError(t, err)

	path, err := natsauth.Rotate(dir, "gpu1", natsauth.UserOptions{Expires: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "gpu1.creds"), path)
	newSigner, err := signing.LoadSigner(path)
	require.NoError(t, err)
	require.NotEqual(t, oldSigner.PublicKey(), newSigner.PublicKey())

	body := []byte(`{"contract":"c-1","seq":1}`)
	newSig, err := newSigner.Sign(body)
	require.NoError(t, err)
	oldSig, err := oldSigner.Sign(body)
	require.NoError(t, err)
	require.NoError(t, keys.Reload(), "one key for gpu1")
	assert.Equal(t, 2, keys.Len())
	assert.NoError(t, keys.Verify("gpu1", body, newSig))
	assert.ErrorIs(t, keys.Verify("gpu1", body, oldSig), signing.ErrBadSignature)

	reload(t, ns, dir)
	assert.Error(t, refused(t, ns, oldCreds), "the old key is revoked")
	assert.NoError(t, refused(t, ns, path), "the new one connects")

	_, err = natsauth.Rotate(dir, "gpu9", natsauth.UserOptions{})
	assert.ErrorContains(t, err, "never issued")
	require.NoError(t, natsauth.Revoke(dir, "gpu1"))
	require.NoError(t, keys.Reload())
	assert.ErrorIs(t, keys.Verify("gpu1", body, newSig), signing.ErrUnknown, "a revoked server has no key")
	path, err = natsauth.Rotate(dir, "gpu1", natsauth.UserOptions{})
	require.NoError(t, err, "rotate gives a revoked party its id back")
	reload(t, ns, dir)
	assert.NoError(t, refused(t, ns, path))
}

// TestExpiry: credentials that expire are refused afterwards, and a
// connection made with them is closed when they do.
func TestExpiry(t *testing.T) {
	dir, ns, _ := operatorMarket(t)
	path, err := natsauth.User(dir, natsauth.RoleClient, "carol", natsauth.UserOptions{Expires: 2 * time.Second})
	require.NoError(t, err)
	es, err := natsauth.List(dir)
	require.NoError(t, err)
	carol := es[len(es)-1]
	require.Equal(t, "carol", carol.ID)
	require.False(t, carol.Expires.IsZero())
	require.WithinDuration(t, time.Now().Add(2*time.Second), carol.Expires, 1500*time.Millisecond)

	nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(path), nats.NoReconnect())
	require.NoError(t, err, "carol connects while her credentials last")
	defer nc.Close()
	time.Sleep(time.Until(carol.Expires) + 200*time.Millisecond)
	closed(t, nc, "carol's connection is closed when her credentials expire")
	// A JWT's expiry is in whole seconds: a connection in its last one may
	// still be taken.
	require.Eventually(t, func() bool { err = refused(t, ns, path); return err != nil }, 3*time.Second, 50*time.Millisecond, "carol is refused")
	assert.Regexp(t, `(?i)expired|authorization violation`, err.Error())
}

// TestPushFullResolver: on NATS's full resolver (a cluster's), Push sends
// the account signed again after a revocation, and the server refuses the
// revoked party without a reload.
func TestPushFullResolver(t *testing.T) {
	dir := t.TempDir()
	_, err := natsauth.Init(dir, natsauth.Options{Resolver: "full", ResolverDir: filepath.Join(dir, "jwt")})
	require.NoError(t, err)
	alice, err := natsauth.User(dir, natsauth.RoleClient, "alice", natsauth.UserOptions{})
	require.NoError(t, err)
	alice = keep(t, alice)
	opts, err := natsserver.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = natsserver.RANDOM_PORT
	ns := natstest.StartWith(t, opts)
	require.NoError(t, refused(t, ns, alice))

	require.NoError(t, natsauth.Revoke(dir, "alice"))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, natsauth.Push(ctx, dir, ns.ClientURL()))
	assert.Error(t, refused(t, ns, alice), "alice is refused once the account is pushed")
}
