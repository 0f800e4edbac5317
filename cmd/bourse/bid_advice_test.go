package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// TestBidWrongPassword: NATS refused the password, which is no reason to
// ask whether NATS is running.
func TestBidWrongPassword(t *testing.T) {
	ns := natstest.StartWith(t, &natsserver.Options{Username: "ada", Password: "secret"})
	_, errOut, code := bourseCmd("bid", "--nats", ns.ClientURL(), "--nats-user", "ada", "--nats-password", "wrong", "--id", "ada", "balance")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "refused the credentials")
	assert.Contains(t, errOut, "check --nats-user and --nats-password")
	assert.NotContains(t, errOut, "is NATS running")
}

// TestBidAsAnother acts as client bob with NATS user alice of
// docs/nats-server.conf: the command says at once that this user may not
// act as bob, and NATS's raw violations are not printed.
func TestBidAsAnother(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	opts, err := natsserver.ProcessConfigFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "nats-server.conf"))
	require.NoError(t, err)
	opts.Port = natsserver.RANDOM_PORT
	ns := natstest.StartWith(t, opts)

	printed := captureStderr(t)
	start := time.Now()
	_, errOut, code := bourseCmd("bid", "--nats", ns.ClientURL(), "--nats-user", "alice", "--nats-password", "alice-secret",
		"--id", "bob", "--timeout", "5s", "balance")
	took := time.Since(start)
	assert.NotEqual(t, 0, code)
	assert.Less(t, took, 3*time.Second, "waited for an answer that could not come")
	assert.Contains(t, errOut, "this NATS user may not act as client bob")
	assert.Contains(t, errOut, "(code permission_denied)")
	assert.Contains(t, errOut, "check --id against --nats-user")
	assert.NotContains(t, errOut, "is the exchange running")
	assert.NotContains(t, printed(), "Permissions Violation")
}

// captureStderr sends the process's stderr to a file until the test ends
// and returns what was written there so far.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	require.NoError(t, err)
	saved := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = saved; _ = f.Close() })
	return func() string {
		b, err := os.ReadFile(f.Name())
		require.NoError(t, err)
		return string(b)
	}
}

// TestBidSpendCapHint: a spend cap's refusal names the spend cap, not the
// GPU cap.
func TestBidSpendCapHint(t *testing.T) {
	b := startBidMarket(t)
	_, err := b.m.Treasury().SetSpendCap(context.Background(), "test", "ada", "CRED", caps.Day, decimal.NewFromInt(1), decimal.RequireFromString("0.8"), "spend-cap/ada")
	require.NoError(t, err)
	_, errOut, code := b.bid("ada", append([]string{"offer"}, short("1m")...)...)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "(code cap_exceeded)")
	assert.Contains(t, errOut, "bourse admin spend-cap OWNER LIMIT --currency CRED")
	assert.NotContains(t, errOut, "bourse admin cap ada")
}

// TestBidWatchHint runs the watch command an offer prints, as printed: it
// carries the connection flags given, so it reaches the same exchange as
// the same client.
func TestBidWatchHint(t *testing.T) {
	b := startBidMarket(t)
	out := b.ok("ada", append([]string{"offer"}, short("300ms")...)...)
	m := regexp.MustCompile(`(?m)^watch it: bourse (bid --nats \S+ --id ada watch c-[0-9a-f]+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, "the hint lacks the connection flags:\n%s", out)
	watched, errOut, code := bourseCmd(strings.Fields(m[1])...)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, watched, "settled")
}

// TestBidProcessServerRefusal offers without --command to a `bourse
// server` that runs processes: the exchange, which knows from the hello
// what the server runs, refuses it for the offer's terms, and offering
// more would not help.
func TestBidProcessServerRefusal(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	dir := t.TempDir()
	config := writeConfig(t, "server.yaml", `
id: gpu-p
nats: {url: `+b.m.URL()+`}
currency: {code: CRED, scale: 2}
nvml: off
gpus: [{count: 2, model: H100, memory_mib: 81920}]
policy: {kind: reserve, p: [["0", "0.01"]]}
runner: {kind: process, allowed: [/bin/true], output_dir: `+dir+`/jobs}
meter_fallback: full_use
outbox_dir: `+dir+`/outbox
heartbeat: 200ms
`)
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"server", "--config", config}, io.Discard, io.Discard) }()
	defer func() { cancel(); <-exited }()

	var errOut string
	var code int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, errOut, code = b.bid("ada", "offer", "--price", "1", "--time-limit", "10s")
		if !strings.Contains(errOut, "no_match") { // until the server's hello
			break
		}
	}
	assert.Equal(t, exitRefused, code, errOut)
	assert.Contains(t, errOut, "gpu-p: this server runs programs: the offer must name a command")
	assert.Contains(t, errOut, "(code "+string(bourse.EJobUnsupported)+")")
	assert.NotContains(t, errOut, "offer more")
}

// TestRejectedHint is the hint of each mix of rejections.
func TestRejectedHint(t *testing.T) {
	for _, tt := range []struct {
		name string
		rs   []protocol.Rejection
		want string
	}{
		{"Busy", []protocol.Rejection{{Server: "a", Reason: "no free GPU of the class"}}, "offer more, or ask for other GPUs, or offer again when GPUs free up"},
		{"Terms", []protocol.Rejection{{Server: "a", Reason: "invalid_offer: x", Code: bourse.EInvalidOffer}}, "the servers refused the offer's terms, not its price"},
		{"Both", []protocol.Rejection{{Server: "a", Reason: "no free GPU of the class"}, {Server: "b", Reason: "permission_denied: y", Code: bourse.EPermission}}, "some servers refused the offer's terms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := rejected(tt.rs)
			assert.Equal(t, bourse.ERejected, bourse.ErrorCode(err))
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// TestAdviceNoServerNamed: an offer to a server by a name no live server
// has is advised to name a listed one, not to try other GPUs.
func TestAdviceNoServerNamed(t *testing.T) {
	f := &bidFlags{}
	err := advise(&bourse.Error{Code: bourse.ENoMatch, Field: "terms.server", Message: `no live server named "nosuch" sells for CRED`}, f)
	assert.Contains(t, err.Error(), "name one of bourse bid servers")
	assert.NotContains(t, err.Error(), "another --model")
	err = advise(&bourse.Error{Code: bourse.ENoMatch, Field: "terms.gpus", Message: "no live server has 9 H100 GPUs for CRED"}, f)
	assert.Contains(t, err.Error(), "another --model")
}
