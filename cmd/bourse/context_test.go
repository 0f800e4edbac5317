package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestContexts is a person's week with two markets: a context for each,
// one in use, the client commands taking its settings, flags and the
// environment still winning, --context and $BOURSE_CONTEXT choosing
// another for one command, and files only the user can read.
func TestContexts(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	for _, v := range []string{"BOURSE_CONTEXT", "BOURSE_ID", "BOURSE_CLIENT", "BOURSE_NATS_URL", "NATS_URL", "BOURSE_NATS_PASSWORD", "BOURSE_NATS_PASSWORD_FILE"} {
		t.Setenv(v, "")
	}
	b := startBidMarket(t)
	// A NATS URL where nothing answers: a market that is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	down := "nats://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	cmd := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := cmd(args...)
		require.Equal(t, 0, code, "bourse %v: %s", args, errOut)
		return out
	}

	assert.Equal(t, "no contexts: add one with bourse context add NAME --nats URL --id ID\n", ok("context", "ls"))
	_, errOut, code := cmd("bid", "balance")
	assert.Equal(t, exitUsage, code, "no context, no --id")
	assert.Contains(t, errOut, "--id is required")

	out := ok("context", "add", "demo", "--nats", b.m.URL(), "--id", "ada", "--description", "the demo")
	assert.Contains(t, out, "context demo added")
	assert.Contains(t, out, "now using context demo", "the first context added is used")
	ok("context", "add", "down", "--nats", down, "--id", "bob", "--nats-password", "hunter2")

	// Only the user reads them: one holds a password.
	for path, want := range map[string]os.FileMode{
		filepath.Join(home, "bourse"): 0o700, filepath.Join(home, "bourse", "contexts"): 0o700,
		filepath.Join(home, "bourse", "contexts", "down.json"): 0o600, filepath.Join(home, "bourse", "context"): 0o600,
	} {
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, want, st.Mode().Perm(), path)
	}
	ls := ok("context", "ls")
	assert.Regexp(t, `(?m)^\* +demo +`+b.m.URL()+` +ada +the demo$`, ls)
	assert.Regexp(t, `(?m)^ +down +`+down+` +bob +-$`, ls)
	show := ok("context", "show", "down")
	assert.Contains(t, show, "--nats-password  (set)")
	assert.NotContains(t, show, "hunter2")

	t.Run("InUse", func(t *testing.T) {
		assert.Contains(t, ok("bid", "balance"), "wallet/CRED/ada")
		assert.Contains(t, ok("bid", "--id", "bob", "balance"), "wallet/CRED/bob", "a flag wins")
		t.Setenv("BOURSE_ID", "bob")
		assert.Contains(t, ok("bid", "balance"), "wallet/CRED/bob", "the environment wins")
	})

	t.Run("ChosenForOneCommand", func(t *testing.T) {
		_, errOut, code := cmd("bid", "--context", "down", "balance")
		assert.Equal(t, exitUnavailable, code, errOut)
		assert.Contains(t, errOut, down)
		t.Setenv("BOURSE_CONTEXT", "down")
		_, _, code = cmd("bid", "balance")
		assert.Equal(t, exitUnavailable, code)
		assert.Contains(t, ok("bid", "--context", "demo", "balance"), "wallet/CRED/ada", "--context wins over $BOURSE_CONTEXT")
		_, errOut, code = cmd("market", "--wait", "1s")
		assert.Equal(t, exitUnavailable, code, "market takes the context too: %s", errOut)
	})

	t.Run("OneUnit", func(t *testing.T) {
		// A URL exported for one market and the password of the context
		// in use would send that password there (the probe of
		// 2026-12-01 caught it so): refused before any connection, and
		// so is the environment's password with a context's URL.
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer listener.Close()
		var dialed atomic.Int32
		go func() {
			for {
				c, err := listener.Accept()
				if err != nil {
					return
				}
				dialed.Add(1)
				_ = c.Close()
			}
		}()
		t.Setenv("BOURSE_NATS_URL", "nats://"+listener.Addr().String())
		_, errOut, code := cmd("bid", "--context", "down", "balance")
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, "$BOURSE_NATS_URL gives --nats, and context down gives the connection (--nats --nats-password): a context is one unit")
		assert.Zero(t, dialed.Load(), "connected to the environment's URL with the context's password")
		ok("bid", "--context", "demo", "--nats", b.m.URL(), "balance") // the command line may override: it says so where it is typed
		t.Setenv("BOURSE_NATS_URL", "")

		pw := filepath.Join(t.TempDir(), "pw")
		require.NoError(t, os.WriteFile(pw, []byte("x\n"), 0o600))
		t.Setenv("BOURSE_NATS_PASSWORD_FILE", pw)
		_, errOut, code = cmd("bid", "--context", "down", "balance")
		assert.Equal(t, exitUsage, code, errOut)
		assert.Contains(t, errOut, "$BOURSE_NATS_PASSWORD_FILE gives --nats-password-file")
	})

	t.Run("Use", func(t *testing.T) {
		assert.Equal(t, "now using context down\n", ok("context", "use", "down"))
		_, _, code := cmd("bid", "balance")
		assert.Equal(t, exitUnavailable, code)
		_, errOut, code := cmd("context", "use", "nosuch")
		assert.Equal(t, exitUsage, code)
		assert.Contains(t, errOut, `no context "nosuch" (there are: demo, down)`)
		ok("context", "use", "demo")
		assert.Contains(t, ok("bid", "balance"), "wallet/CRED/ada")
	})

	t.Run("Remove", func(t *testing.T) {
		assert.Equal(t, "context demo removed\nno context in use now\n", ok("context", "rm", "demo"))
		_, _, code := cmd("bid", "balance")
		assert.Equal(t, exitUsage, code, "no context in use: no --id")
		assert.NotContains(t, ok("context", "ls"), "demo")
	})
}
