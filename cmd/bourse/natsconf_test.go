package main

import (
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNATSConfigShipped: docs/nats-server.conf is what nats-config makes
// for its example parties, so the file and the command cannot drift.
func TestNATSConfigShipped(t *testing.T) {
	out := execute(t, nil, "admin", "nats-config", "--client", "alice", "--client", "bob", "--server", "gpu1", "--server", "gpu2", "--example-passwords")
	shipped, err := os.ReadFile("../../docs/nats-server.conf")
	require.NoError(t, err)
	assert.Equal(t, string(shipped), out, "regenerate: bourse admin nats-config --client alice --client bob --server gpu1 --server gpu2 --example-passwords > docs/nats-server.conf")
}

// TestNATSConfigHashed: without --example-passwords each password is
// random, printed once to stderr and kept only as a bcrypt hash, and
// nats-server reads the file.
func TestNATSConfigHashed(t *testing.T) {
	out, errOut, code := bourseCmd("admin", "nats-config", "--client", "alice", "--server", "gpu1")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	require.Len(t, lines, 3, "exchange, alice, gpu1")
	for _, l := range lines {
		user, pw, ok := strings.Cut(l, " ")
		require.True(t, ok, l)
		assert.GreaterOrEqual(t, len(pw), 20)
		assert.NotContains(t, out, pw, "%s's password in the clear", user)
	}
	assert.Contains(t, out, `password: "$2a$11$`)

	file := t.TempDir() + "/nats.conf"
	require.NoError(t, os.WriteFile(file, []byte(out), 0o600))
	opts, err := server.ProcessConfigFile(file)
	require.NoError(t, err)
	assert.Len(t, opts.Users, 3)
	assert.True(t, opts.JetStream)
}

func TestNATSConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--client", "alice", "--server", "alice"}, `"alice" twice`},
		{[]string{"--client", "Alice.Smith"}, `client "Alice.Smith"`},
		{[]string{"--exchange-user", "bob", "--client", "bob"}, `"bob" twice`},
	} {
		_, errOut, code := bourseCmd(append([]string{"admin", "nats-config"}, tt.args...)...)
		assert.Equal(t, 1, code)
		assert.Contains(t, errOut, tt.want)
	}
}
