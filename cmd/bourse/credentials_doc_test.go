package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/natsauth"
	"github.com/bourse/bourse/signing"
)

// docSteps are the commands of the code blocks of docs/operations.md's
// section titled title, in order, without their comments.
func docSteps(t *testing.T, title string) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	doc := string(b)
	i := strings.Index(doc, "\n## "+title+"\n")
	require.GreaterOrEqual(t, i, 0, "docs/operations.md has a section %q", title)
	sec := doc[i+1:]
	if j := strings.Index(sec[3:], "\n## "); j >= 0 {
		sec = sec[:j+3]
	}
	var steps []string
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "    ") {
			continue // a code block's lines are indented, in a list or not
		}
		step, _, _ := strings.Cut(strings.TrimSpace(line), "#")
		if step = strings.TrimSpace(step); step != "" {
			steps = append(steps, step)
		}
	}
	return steps
}

// TestCredentialsDoc follows docs/operations.md's "Credentials": every
// command of its code blocks, in order, on a folder of its own, against a
// real nats-server (embedded, operator mode) and an exchange's server
// keys reloaded on SIGHUP as bourse exchange does, checking after each
// what the section says. A step it does not know fails it: the section
// and this test change together.
func TestCredentialsDoc(t *testing.T) {
	steps := docSteps(t, "Credentials")
	dir := filepath.Join(t.TempDir(), "nats")
	var (
		ns      *server.Server
		keys    *signing.KeyFile
		oldGPU1 string // a copy of gpu1's credentials from before the rotation
		alice   string // a copy of alice's
		seen    = map[string]bool{}
	)
	body := []byte(`{"contract":"c-1","seq":1}`)
	connects := func(creds string) error {
		t.Helper()
		nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(creds), nats.NoReconnect())
		if err == nil {
			nc.Close()
		}
		return err
	}
	keep := func(id string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, id+".creds"))
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), id+".creds")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	// verifiedAs waits for the exchange's keys to take gpu1's readings
	// signed with the key in creds.
	verifiedAs := func(creds string) bool {
		s, err := signing.LoadSigner(creds)
		require.NoError(t, err)
		sig, err := s.Sign(body)
		require.NoError(t, err)
		return keys.Verify("gpu1", body, sig) == nil
	}

	for _, step := range steps {
		t.Logf("$ %s", step)
		line := strings.ReplaceAll(step, "/etc/bourse/nats", dir)
		args := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "bourse admin nats-auth init "):
			execute(t, nil, args[1:]...)
			seen["init"] = true

		case strings.HasPrefix(line, "nats-server -c "):
			opts, err := server.ProcessConfigFile(args[2])
			require.NoError(t, err)
			opts.Port = server.RANDOM_PORT
			ns = natstest.StartWith(t, opts)
			require.NoError(t, connects(filepath.Join(dir, "exchange.creds")), "the exchange's credentials")

		case strings.HasPrefix(line, "bourse admin nats-auth user "):
			execute(t, nil, args[1:]...)
			require.NoError(t, connects(filepath.Join(dir, "alice.creds")), "alice connects")
			require.NoError(t, connects(filepath.Join(dir, "gpu1.creds")), "gpu1 connects")
			alice = keep("alice")
			var err error
			keys, err = signing.OpenKeyFile(filepath.Join(dir, natsauth.ServerKeys))
			require.NoError(t, err)
			stop := onHUP("server keys", keys.Reload, slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer stop()
			seen["user"] = true

		case line == `kill -HUP "$(pidof bourse)"`:
			require.NotNil(t, keys, "the exchange runs")
			require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
			require.Eventually(t, func() bool { return verifiedAs(filepath.Join(dir, "gpu1.creds")) }, 5*time.Second, 20*time.Millisecond,
				"the exchange takes gpu1's current key")
			if oldGPU1 != "" {
				assert.False(t, verifiedAs(oldGPU1), "and no longer the one rotated out")
				seen["hup after rotate"] = true
			}

		case strings.HasPrefix(line, "bourse admin nats-auth list "):
			out := execute(t, nil, args[1:]...)
			for _, id := range []string{"exchange", "alice", "gpu1"} {
				assert.Contains(t, out, "\n"+id+" ", "list shows %s", id)
			}
			assert.Contains(t, out, time.Now().AddDate(1, 0, 0).UTC().Format("2006-01"), "a year's expiry by default")
			seen["list"] = true

		case strings.HasPrefix(line, "bourse admin nats-auth rotate ") && args[len(args)-1] == "gpu1":
			oldGPU1 = keep("gpu1")
			execute(t, nil, args[1:]...)
			require.NoError(t, connects(filepath.Join(dir, "gpu1.creds")), "the new file connects at once")
			require.NoError(t, connects(oldGPU1), "and the old one until nats-server reloads")
			seen["rotate"] = true

		case line == "nats-server --signal reload":
			opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
			require.NoError(t, err)
			opts.Port = ns.Addr().(*net.TCPAddr).Port
			opts.StoreDir, opts.JetStream, opts.NoSigs = filepath.Dir(ns.StoreDir()), true, true
			require.NoError(t, ns.ReloadOptions(opts))
			if oldGPU1 != "" {
				assert.Error(t, connects(oldGPU1), "gpu1's old file is refused")
				assert.NoError(t, connects(filepath.Join(dir, "gpu1.creds")), "its new one is not")
				seen["reload after rotate"] = true
			}
			if seen["revoke"] {
				err := connects(alice)
				require.Error(t, err, "alice is refused")
				assert.Contains(t, strings.ToLower(err.Error()), "authorization violation")
				seen["reload after revoke"] = true
			}

		case strings.HasPrefix(line, "bourse admin nats-auth revoke ") && args[len(args)-1] == "alice":
			execute(t, nil, args[1:]...)
			assert.NoFileExists(t, filepath.Join(dir, "alice.creds"))
			seen["revoke"] = true

		default:
			t.Fatalf("docs/operations.md, Credentials, has a step this test does not follow: %s", step)
		}
	}
	for _, s := range []string{"init", "user", "list", "rotate", "hup after rotate", "reload after rotate", "revoke", "reload after revoke"} {
		assert.True(t, seen[s], "the section has the step: %s", s)
	}
}

// TestNATSAuthPush: on the full resolver, bourse admin nats-auth push
// sends the account after a revocation, and the server refuses the
// revoked party without a reload; with the memory resolver nothing
// answers, and push says so.
func TestNATSAuthPush(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	execute(t, nil, "admin", "nats-auth", "init", dir, "--resolver", "full", "--resolver-dir", filepath.Join(dir, "jwt"))
	execute(t, nil, "admin", "nats-auth", "user", dir, "--client", "alice")
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = server.RANDOM_PORT
	ns := natstest.StartWith(t, opts)
	b, err := os.ReadFile(filepath.Join(dir, "alice.creds"))
	require.NoError(t, err)
	alice := filepath.Join(t.TempDir(), "alice.creds")
	require.NoError(t, os.WriteFile(alice, b, 0o600))
	nc, err := nats.Connect(ns.ClientURL(), nats.UserCredentials(alice), nats.NoReconnect())
	require.NoError(t, err)
	defer nc.Close()

	execute(t, nil, "admin", "nats-auth", "revoke", dir, "alice")
	out := execute(t, nil, "admin", "nats-auth", "push", dir, "--nats", ns.ClientURL())
	assert.Contains(t, out, "account pushed")
	require.Eventually(t, func() bool { return !nc.IsConnected() }, 5*time.Second, 20*time.Millisecond, "alice's connection is closed")
	_, err = nats.Connect(ns.ClientURL(), nats.UserCredentials(alice), nats.NoReconnect())
	assert.Error(t, err, "alice is refused")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	mem := filepath.Join(t.TempDir(), "nats")
	_, err = natsauth.Init(mem, natsauth.Options{})
	require.NoError(t, err)
	opts, err = server.ProcessConfigFile(filepath.Join(mem, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = server.RANDOM_PORT
	assert.Error(t, natsauth.Push(ctx, mem, natstest.StartWith(t, opts).ClientURL()), "the memory resolver takes no pushes")
}
