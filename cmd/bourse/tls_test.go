package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
)

// TestMarketOverTLS runs the market's three commands against a NATS
// server that speaks only TLS and takes only clients whose certificate
// its CA signed, configured by `bourse admin nats-config` with
// certificates the test makes: `bourse exchange` and
// `bourse server` with the CA, certificate and key as flags and in the
// server's config file, and `bourse bid` trading a contract to its
// settlement. Without the client certificate, or without the CA, a
// command says why it cannot connect.
func TestMarketOverTLS(t *testing.T) {
	files := natstest.MakeTLS(t)
	// The NATS server runs the configuration nats-config makes, TLS and
	// per-party users and permissions both.
	conf := filepath.Join(t.TempDir(), "nats.conf")
	text := execute(t, nil, "admin", "nats-config", "--client", "ada", "--server", "gpu-tls", "--example-passwords",
		"--tls-cert", files.ServerCert, "--tls-key", files.ServerKey, "--tls-ca", files.CA, "--tls-verify")
	require.NoError(t, os.WriteFile(conf, []byte(text), 0o600))
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	opts.Port = server.RANDOM_PORT
	ns := natstest.StartWith(t, opts)
	url := ns.ClientURL() // tls://…
	tlsFlags := []string{"--nats", url, "--nats-ca", files.CA, "--nats-cert", files.ClientCert, "--nats-key", files.ClientKey}

	db := pgtest.FreshDB(t)
	ok := adminOK(t, db)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "ada", "--currency", "CRED")
	ok("grant", "ada", "100", "--currency", "CRED", "--key", "grant-ada")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// start runs a command until the test ends; exited closes when it
	// stops, its status in *code.
	start := func(name string, args ...string) (log *bytes.Buffer, exited <-chan struct{}, code *int) {
		var out bytes.Buffer
		done, status := make(chan struct{}), new(int)
		go func() { *status = run(ctx, args, &out, &out); close(done) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("%s did not stop", name)
			}
		})
		return &out, done, status
	}
	// gpu-tls signs its readings with a key of its own; the exchange
	// requires it.
	seedFile := filepath.Join(t.TempDir(), "gpu-tls.nk")
	keyLine := execute(t, nil, "admin", "signing-key", "gpu-tls", "--out", seedFile)
	require.True(t, strings.HasPrefix(keyLine, "gpu-tls N"), keyLine)
	keysFile := filepath.Join(t.TempDir(), "server-keys")
	require.NoError(t, os.WriteFile(keysFile, []byte(keyLine), 0o644))
	exchangeLog, exchangeExited, exchangeCode := start("exchange", append([]string{"exchange", "--db", db, "--metrics", "", "--reading-every", "200ms",
		"--nats-user", "exchange", "--nats-password", "exchange-secret", "--server-keys", keysFile}, tlsFlags...)...)
	config := writeConfig(t, "server.yaml", `
id: gpu-tls
nats: {url: "`+url+`", user: gpu-tls, password: gpu-tls-secret, ca: "`+files.CA+`", cert: "`+files.ClientCert+`", key: "`+files.ClientKey+`"}
currency: {code: CRED, scale: 2}
nvml: off
gpus: [{count: 2, model: H100, memory_mib: 81920}]
policy: {kind: reserve, p: [["0", "0.01"]]}
runner: {kind: synthetic}
heartbeat: 200ms
reading_every: 200ms
signing_key: `+seedFile+`
`)
	serverLog, serverExited, serverCode := start("server", "server", "--config", config)

	bid := func(args ...string) (string, string, int) {
		return bourseCmd(append(append([]string{"bid", "--id", "ada", "--nats-user", "ada", "--nats-password", "ada-secret"}, tlsFlags...), args...)...)
	}
	var offer string
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errOut, code := bid("offer", "--gpus", "1", "--model", "H100", "--price", "0.05", "--duration", "500ms", "--time-limit", "10s")
		if code == 0 && strings.Contains(out, "contract c-") {
			offer = out
			break
		}
		select {
		case <-exchangeExited:
			t.Fatalf("the exchange exited with %d: %s", *exchangeCode, exchangeLog)
		case <-serverExited:
			t.Fatalf("the server exited with %d: %s", *serverCode, serverLog)
		default:
		}
		require.True(t, time.Now().Before(deadline), "no contract over TLS in 20s: %s %s", out, errOut)
		time.Sleep(200 * time.Millisecond)
	}
	id := offer[strings.Index(offer, "contract c-")+len("contract ") : strings.Index(offer, "contract c-")+len("contract c-")+20]
	out, errOut, code := bid("watch", id)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "settled   completed")
	out, errOut, code = bid("--json", "contracts")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `"signed": \{\s+"body": "[A-Za-z0-9+/=]+",\s+"sig": "[A-Za-z0-9_-]+"`, out, "the settled contract keeps gpu-tls's signed reading")
	assert.Regexp(t, `"accept_signed": \{\s+"body": "[A-Za-z0-9+/=]+",\s+"sig": "[A-Za-z0-9_-]+"`, out, "and its signed accept")

	_, errOut, code = bourseCmd("admin", "signing-key", "gpu-tls", "--out", seedFile)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "a key is never overwritten")

	// A party without a client certificate is turned away at the handshake;
	// one without the CA cannot trust the server.
	_, errOut, code = bid("--nats-cert", "", "--nats-key", "", "balance")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, errOut, "tls", "the handshake failed, with the remote's words or a closed connection, as the race goes")
	assert.Contains(t, errOut, "give --nats-cert and --nats-key")
	_, errOut, code = bid("--nats-ca", "", "balance")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, errOut, "x509: certificate signed by unknown authority")
	assert.Contains(t, errOut, "--nats-ca must be the CA")
	_, errOut, code = bid("--nats-key", "", "balance")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--nats-cert and --nats-key go together")
}
