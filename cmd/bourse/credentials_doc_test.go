package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
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

// docNATS is the nats-server TestCredentialsDoc runs the section's
// commands against.
type docNATS interface {
	// start runs `nats-server args…` (args with the test's paths).
	start(t *testing.T, args []string)
	// reload is `nats-server --signal reload`: it returns once the server
	// has reloaded, and fails the test if it could not.
	reload(t *testing.T, dir string)
	url() string
}

// embeddedNATS is the nats-server the module requires (2.15), in process.
type embeddedNATS struct{ ns *server.Server }

func (e *embeddedNATS) start(t *testing.T, args []string) {
	require.Len(t, args, 2, "the embedded server takes -c FILE alone: %v", args)
	opts, err := server.ProcessConfigFile(args[1])
	require.NoError(t, err)
	opts.Port = server.RANDOM_PORT
	e.ns = natstest.StartWith(t, opts)
}

func (e *embeddedNATS) reload(t *testing.T, dir string) {
	opts, err := server.ProcessConfigFile(filepath.Join(dir, "nats-server.conf"))
	require.NoError(t, err)
	opts.Port, opts.NoSigs = e.ns.Addr().(*net.TCPAddr).Port, true
	require.NoError(t, e.ns.ReloadOptions(opts))
}

func (e *embeddedNATS) url() string { return e.ns.ClientURL() }

// debianNATS is Debian's nats-server (2.9), which the README installs, as
// a process on the port the test gave init.
type debianNATS struct {
	bin  string
	port int
	ns   *natstest.Binary
}

func (d *debianNATS) start(t *testing.T, args []string) { d.ns = natstest.RunBinary(t, d.bin, args...) }

func (d *debianNATS) reload(t *testing.T, _ string) {
	if why := d.ns.Reload(); why != "" {
		t.Fatalf("nats-server --signal reload returned 0, and the server did not reload: %s", why)
	}
}

func (d *debianNATS) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", d.port) }

// TestCredentialsDoc follows docs/operations.md's "Credentials": every
// command of its code blocks, in order, on a folder of its own, against a
// real nats-server in operator mode, and an exchange's server keys
// reloaded on SIGHUP as bourse exchange does, checking after each what
// the section says. A step it does not know fails it: the section and
// this test change together. It runs twice: on Debian's nats-server 2.9,
// which the README installs, as a process (where a reload once failed in
// the log alone and a revoked party kept trading), and on the embedded
// 2.15.
func TestCredentialsDoc(t *testing.T) {
	t.Run("Debian", func(t *testing.T) {
		d := &debianNATS{bin: natstest.DebianNATS(t), port: natstest.FreePort(t)}
		followCredentialsDoc(t, d, "--port", strconv.Itoa(d.port), "--sync-interval", "default") // 2.9 takes no sync_interval
	})
	t.Run("Embedded", func(t *testing.T) { followCredentialsDoc(t, &embeddedNATS{}) })
}

// followCredentialsDoc follows the section with ns, adding initArgs to
// init's.
func followCredentialsDoc(t *testing.T, ns docNATS, initArgs ...string) {
	steps := docSteps(t, "Credentials")
	dir := filepath.Join(t.TempDir(), "nats")
	store := t.TempDir()
	var (
		keys    *signing.KeyFile
		oldGPU1 string // a copy of gpu1's credentials from before the rotation
		alice   string // a copy of alice's
		aliceNC *nats.Conn
		seen    = map[string]bool{}
	)
	body := []byte(`{"contract":"c-1","seq":1}`)
	connects := func(creds string) error {
		t.Helper()
		nc, err := nats.Connect(ns.url(), nats.UserCredentials(creds), nats.NoReconnect())
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
		line = strings.ReplaceAll(line, "/var/lib/bourse/jetstream", store)
		if strings.Contains(line, "nats://127.0.0.1:4222") {
			line = strings.ReplaceAll(line, "nats://127.0.0.1:4222", ns.url())
		}
		args := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "bourse admin nats-auth init "):
			execute(t, nil, append(args[1:], initArgs...)...)
			seen["init"] = true

		case strings.HasPrefix(line, "nats-server -c "):
			ns.start(t, args[1:])
			require.NoError(t, connects(filepath.Join(dir, "exchange.creds")), "the exchange's credentials")

		case strings.HasPrefix(line, "bourse admin nats-auth user "):
			execute(t, nil, args[1:]...)
			require.NoError(t, connects(filepath.Join(dir, "alice.creds")), "alice connects")
			require.NoError(t, connects(filepath.Join(dir, "gpu1.creds")), "gpu1 connects")
			alice = keep("alice")
			var err error
			aliceNC, err = nats.Connect(ns.url(), nats.UserCredentials(alice), nats.NoReconnect())
			require.NoError(t, err)
			defer aliceNC.Close()
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
			ns.reload(t, dir)
			seen["reload"] = true

		case strings.HasPrefix(line, "bourse admin nats-auth check "):
			require.True(t, seen["reload"], "check follows a reload")
			out, errOut, code := bourseCmd(args[1:]...)
			require.Equal(t, 0, code, "check: %s%s", out, errOut)
			assert.Contains(t, out, "has taken the account")
			if seen["revoke"] {
				assert.Contains(t, out, "alice", "check names whom it refuses")
				err := connects(alice)
				require.Error(t, err, "alice is refused")
				assert.Contains(t, strings.ToLower(err.Error()), "authorization violation")
				require.Eventually(t, func() bool { return !aliceNC.IsConnected() }, 5*time.Second, 20*time.Millisecond, "alice's open connection is closed")
				seen["refused after revoke"] = true
			} else if oldGPU1 != "" {
				assert.Error(t, connects(oldGPU1), "gpu1's old file is refused")
				assert.NoError(t, connects(filepath.Join(dir, "gpu1.creds")), "its new one is not")
				seen["refused after rotate"] = true
			}

		case strings.HasPrefix(line, "bourse admin nats-auth revoke ") && args[len(args)-1] == "alice":
			execute(t, nil, args[1:]...)
			assert.NoFileExists(t, filepath.Join(dir, "alice.creds"))
			seen["revoke"] = true

		default:
			t.Fatalf("docs/operations.md, Credentials, has a step this test does not follow: %s", step)
		}
	}
	for _, s := range []string{"init", "user", "list", "rotate", "hup after rotate", "refused after rotate", "revoke", "refused after revoke"} {
		assert.True(t, seen[s], "the section has the step: %s", s)
	}
}

// TestNATSAuthPush: on the full resolver, bourse admin nats-auth push
// sends the account after a revocation, and the server refuses the
// revoked party without a reload; with the memory resolver nothing
// answers, and push says so.
func TestNATSAuthPush(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	execute(t, nil, "admin", "nats-auth", "init", dir, "--resolver", "full", "--resolver-dir", filepath.Join(dir, "jwt"), "--store-dir", t.TempDir())
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

	// revoke --nats pushes and checks in one step.
	execute(t, nil, "admin", "nats-auth", "user", dir, "--client", "bob")
	out = execute(t, nil, "admin", "nats-auth", "revoke", dir, "bob", "--nats", ns.ClientURL())
	assert.Contains(t, out, "account pushed to "+ns.ClientURL())
	assert.Contains(t, out, "nats-server at "+ns.ClientURL()+" refuses bob's keys")

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

// TestNATSAuthCheck: on Debian's nats-server, revoke --nats waits for the
// operator's reload and says the server refuses the party; started with
// -sd, as the docs once said, the reload fails in the server's log alone,
// and check and rotate --nats fail, saying so and what to do, where they
// once printed "reload nats-server" and the revoked party went on.
func TestNATSAuthCheck(t *testing.T) {
	bin := natstest.DebianNATS(t)
	market := func(t *testing.T, storeDir string, args ...string) (dir, url string, ns *natstest.Binary) {
		dir = filepath.Join(t.TempDir(), "nats")
		port := natstest.FreePort(t)
		execute(t, nil, "admin", "nats-auth", "init", dir, "--port", strconv.Itoa(port), "--store-dir="+storeDir, "--sync-interval=default")
		execute(t, nil, "admin", "nats-auth", "user", dir, "--client", "alice")
		ns = natstest.RunBinary(t, bin, append([]string{"-c", filepath.Join(dir, "nats-server.conf")}, args...)...)
		return dir, fmt.Sprintf("nats://127.0.0.1:%d", port), ns
	}

	t.Run("RevokeWaitsForTheReload", func(t *testing.T) {
		dir, url, ns := market(t, t.TempDir())
		out, errOut := &lockedBuffer{}, &lockedBuffer{}
		done := make(chan int, 1)
		go func() {
			done <- run(context.Background(), []string{"admin", "nats-auth", "revoke", dir, "alice", "--nats", url, "--wait", "30s"}, out, errOut)
		}()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "reload it now") }, 10*time.Second, 20*time.Millisecond,
			"revoke says what it waits for: %s%s", out, errOut)
		require.Empty(t, ns.Reload())
		select {
		case code := <-done:
			require.Equal(t, 0, code, "%s%s", out, errOut)
		case <-time.After(30 * time.Second):
			t.Fatal("revoke --nats did not return")
		}
		assert.Contains(t, out.String(), "nats-server at "+url+" refuses alice's keys")
	})

	t.Run("StartedWithSD", func(t *testing.T) {
		dir, url, ns := market(t, "", "-sd", t.TempDir())
		alice := filepath.Join(t.TempDir(), "alice.creds")
		b, err := os.ReadFile(filepath.Join(dir, "alice.creds"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(alice, b, 0o600))

		out, errOut, code := bourseCmd("admin", "nats-auth", "revoke", dir, "alice")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "alice revoked in the account")
		assert.Contains(t, errOut, "bourse admin nats-auth check "+dir+" --nats URL", "without --nats it says how to check")
		assert.Contains(t, ns.Reload(), "jetstream storage dir", "nats-server 2.9 does not reload a store given with -sd")
		nc, err := nats.Connect(url, nats.UserCredentials(alice), nats.NoReconnect())
		require.NoError(t, err, "so alice still connects")
		nc.Close()

		_, errOut, code = bourseCmd("admin", "nats-auth", "check", dir, "--nats", url, "--wait", "500ms")
		assert.Equal(t, exitFailure, code, errOut)
		for _, want := range []string{"still accepts a key the account revokes", "Failed to reload", "-sd", "store_dir"} {
			assert.Contains(t, errOut, want)
		}
		_, errOut, code = bourseCmd("admin", "nats-auth", "rotate", dir, "alice", "--nats", url, "--wait", "500ms")
		assert.Equal(t, exitFailure, code, errOut)
		assert.Contains(t, errOut, "still accepts a key the account revokes")
	})

	t.Run("NoServer", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "nats")
		execute(t, nil, "admin", "nats-auth", "init", dir)
		_, errOut, code := bourseCmd("admin", "nats-auth", "check", dir, "--nats", fmt.Sprintf("nats://127.0.0.1:%d", natstest.FreePort(t)), "--wait", "0s")
		assert.Equal(t, exitUnavailable, code, errOut)
		assert.Contains(t, errOut, "no NATS server answers")
	})
}
