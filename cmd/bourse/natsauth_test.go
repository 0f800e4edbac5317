package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNATSAuthCommand: init and user write the files docs/operations.md
// names, nats-server reads the configuration, and mistakes say what to do.
func TestNATSAuthCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	store := t.TempDir()
	out := execute(t, nil, "admin", "nats-auth", "init", dir, "--resolver", "full", "--resolver-dir", filepath.Join(dir, "jwt"), "--store-dir", store)
	for _, f := range []string{"operator.nk", "account.nk", "account.jwt", "nats-server.conf", "exchange.creds"} {
		assert.Contains(t, out, filepath.Join(dir, f))
	}
	out = execute(t, nil, "admin", "nats-auth", "user", dir, "--client", "alice", "--server", "gpu1")
	assert.Equal(t, filepath.Join(dir, "alice.creds")+"\n"+filepath.Join(dir, "gpu1.creds")+"\n", out)
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	assert.Len(t, opts.TrustedOperators, 1)
	assert.Equal(t, store, opts.StoreDir, "the configuration names the store, so that nats-server 2.9 can reload it")

	require.NoError(t, os.Remove(filepath.Join(dir, "gpu1.creds")), "handed out")
	_, errOut, code := bourseCmd("admin", "nats-auth", "user", dir, "--client", "gpu1")
	assert.Equal(t, 1, code, "a client under a server's id")
	assert.Contains(t, errOut, `"gpu1" was issued to the server gpu1`)
	assert.NoFileExists(t, filepath.Join(dir, "gpu1.creds"))

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"init", dir}, "holds a market's keys already"},
		{[]string{"user", dir}, "name the parties"},
		{[]string{"user", t.TempDir(), "--client", "bob"}, "run bourse admin nats-auth init first"},
		{[]string{"init", t.TempDir(), "--resolver", "url"}, `resolver "url": want memory or full`},
	} {
		_, errOut, code := bourseCmd(append([]string{"admin", "nats-auth"}, tt.args...)...)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, tt.want)
	}
}
