package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
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

// TestNATSConfigMadeBy: the comment's command makes the same file, the
// address included.
func TestNATSConfigMadeBy(t *testing.T) {
	args := []string{"admin", "nats-config", "--client", "alice", "--host", "0.0.0.0", "--port", "4333", "--store-dir", "/var/lib/bourse/js", "--example-passwords"}
	out := execute(t, nil, args...)
	assert.Contains(t, out, "#   bourse admin nats-config --client alice --example-passwords --host 0.0.0.0 --port 4333 --store-dir /var/lib/bourse/js\n")
	assert.Contains(t, out, "port: 4333\nhost: 0.0.0.0\n")
	again := strings.Fields(strings.TrimPrefix(strings.Split(strings.Split(out, "#   ")[1], "\n")[0], "bourse "))
	assert.Equal(t, out, execute(t, nil, again...), "the command in the comment remakes the file")
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

// TestNATSConfigReload: adding a party in password mode, as
// docs/operations.md says, is a new file and a reload, and Debian's
// nats-server (2.9, the README's) takes it when the file names its store
// (--store-dir); started with the store on the command line it could
// not, and needed a restart.
func TestNATSConfigReload(t *testing.T) {
	bin := natstest.DebianNATS(t)
	port := strconv.Itoa(natstest.FreePort(t))
	store := t.TempDir()
	conf := filepath.Join(t.TempDir(), "bourse.conf")
	write := func(parties ...string) {
		// nats-server 2.9 takes no sync_interval (docs/operations.md, durability).
		args := append([]string{"admin", "nats-config", "--port", port, "--store-dir", store, "--example-passwords", "--sync-interval", "default"}, parties...)
		require.NoError(t, os.WriteFile(conf, []byte(execute(t, nil, args...)), 0o600))
	}
	write("--client", "alice")
	ns := natstest.RunBinary(t, bin, "-c", conf)
	url := "nats://127.0.0.1:" + port
	connect := func(id string) error {
		nc, err := nats.Connect(url, nats.UserInfo(id, id+"-secret"), nats.NoReconnect())
		if err == nil {
			nc.Close()
		}
		return err
	}
	require.NoError(t, connect("alice"))
	require.Error(t, connect("bob"))

	write("--client", "alice", "--client", "bob")
	require.Empty(t, ns.Reload(), "nats-server reloads the file")
	assert.NoError(t, connect("bob"), "bob, added, connects")
	assert.NoError(t, connect("alice"))
}
