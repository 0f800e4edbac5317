package main

import (
	"os"
	"path/filepath"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
)

// TestBidSettingsFromEnv: with the market's URL and the client's name in
// the environment, once per shell, a command needs neither flag; a flag
// still wins over its variable.
func TestBidSettingsFromEnv(t *testing.T) {
	b := startBidMarket(t)
	t.Setenv("BOURSE_NATS_URL", b.m.URL())
	t.Setenv("BOURSE_ID", "ada")
	out, errOut, code := bourseCmd("bid", "balance")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wallet/CRED/ada")
	out, errOut, code = bourseCmd("bid", "--id", "bob", "balance")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "wallet/CRED/bob")

	t.Setenv("BOURSE_NATS_URL", "nats://127.0.0.1:1")
	_, errOut, _ = bourseCmd("bid", "balance")
	assert.Contains(t, errOut, "connect to NATS at nats://127.0.0.1:1", "the variable is read")
}

// TestNATSPasswordSources gives bourse bid its NATS password in each way
// but the command line: a file, a variable, a variable naming a file.
// NATS takes it (no exchange runs, so the request finds none, which is
// not a refused login); a wrong one is refused; a flag and its file
// together are a mistake.
func TestNATSPasswordSources(t *testing.T) {
	ns := natstest.StartWith(t, &natsserver.Options{Username: "ada", Password: "s3cret"})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(good, []byte("s3cret\n"), 0o600))
	require.NoError(t, os.WriteFile(bad, []byte("wrong\n"), 0o600))
	base := []string{"bid", "--nats", ns.ClientURL(), "--id", "ada", "--nats-user", "ada", "--timeout", "200ms"}
	for _, tt := range []struct {
		name      string
		env       map[string]string
		args      []string
		permitted bool
		err       string
	}{
		{name: "File", args: []string{"--nats-password-file", good}, permitted: true},
		{name: "Env", env: map[string]string{"BOURSE_NATS_PASSWORD": "s3cret"}, permitted: true},
		{name: "EnvFile", env: map[string]string{"BOURSE_NATS_PASSWORD_FILE": good}, permitted: true},
		{name: "FileBeatsEnv", env: map[string]string{"BOURSE_NATS_PASSWORD": "wrong"}, args: []string{"--nats-password-file", good}, permitted: true},
		{name: "WrongFile", args: []string{"--nats-password-file", bad}, err: "refused the credentials"},
		{name: "Both", args: []string{"--nats-password", "s3cret", "--nats-password-file", good}, err: "--nats-password and --nats-password-file both give it"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			_, errOut, code := bourseCmd(append(append(base, tt.args...), "balance")...)
			assert.NotEqual(t, 0, code)
			if tt.permitted {
				assert.Contains(t, errOut, "no exchange is listening", "NATS took the password")
			} else {
				assert.Contains(t, errOut, tt.err)
			}
		})
	}
}

// TestAdminDatabaseURL: bourse admin finds the ledger in $DATABASE_URL,
// as scripts/pg.sh env sets it.
func TestAdminDatabaseURL(t *testing.T) {
	t.Setenv("DATABASE_URL", pgtest.FreshDB(t))
	out, errOut, code := bourseCmd("admin", "currency", "CRED")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "currency CRED, 2 decimal places\n", out)
	out, errOut, code = bourseCmd("admin", "audit")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pass")
}

// TestServerConfigPasswordFile: a GPU node's configuration names its NATS
// password's file rather than holding the password.
func TestServerConfigPasswordFile(t *testing.T) {
	c, err := parseServerConfig("s.yaml", []byte("nats: {url: nats://x:4222, user: gpu1, password_file: /etc/bourse/gpu1.pw}\n"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/bourse/gpu1.pw", c.NATS.PasswordFile)
	_, err = c.NATS.natsLogin.options()
	assert.ErrorContains(t, err, "--nats-password-file: open /etc/bourse/gpu1.pw")
}
