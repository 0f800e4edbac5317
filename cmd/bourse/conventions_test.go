package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/natstest"
)

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "# bash completion V2 for bourse", "zsh": "#compdef bourse", "fish": "# fish completion for bourse"} {
		t.Run(shell, func(t *testing.T) {
			out, errOut, code := bourseCmd("completion", shell)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, want)
		})
	}
	_, errOut, code := bourseCmd("completion", "tcsh")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `unknown command "tcsh" for "bourse completion"`)
	_, errOut, code = bourseCmd("bid", "nosuch")
	assert.Equal(t, exitUsage, code, "a parent command's unknown subcommand")
	assert.Contains(t, errOut, `unknown command "nosuch" for "bourse bid"`)
	out, _, code := bourseCmd("admin")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "Available Commands", "a parent command alone shows its help")
}

func TestVersionFlag(t *testing.T) {
	flag, _, code := bourseCmd("--version")
	require.Equal(t, 0, code)
	cmd, _, _ := bourseCmd("version")
	assert.Equal(t, cmd, flag)
	assert.True(t, strings.HasPrefix(flag, "bourse "), flag)
}

// TestExitStatus is each class of error's status.
func TestExitStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{errors.New("open x: no such file"), exitFailure},
		{usagef("--id is required"), exitUsage},
		{fmt.Errorf("wrapped: %w", usagef("bad")), exitUsage},
		{errors.New(`unknown command "x" for "bourse"`), exitUsage},
		{errors.New(`required flag(s) "currency" not set`), exitUsage},
		{&bourse.Error{Code: bourse.EInvalidOffer}, exitFailure},
		{&bourse.Error{Code: bourse.EInternal}, exitFailure},
		{&bourse.Error{Code: bourse.EOutputLost}, exitFailure},
		{&bourse.Error{Code: bourse.EInsufficientFunds}, exitRefused},
		{fmt.Errorf("offer: %w", &bourse.Error{Code: bourse.ERejected}), exitRefused},
		{&bourse.Error{Code: bourse.EPermission}, exitRefused},
		{&bourse.Error{Code: bourse.EUnavailable}, exitUnavailable},
		{&bourse.Error{Code: bourse.EDeadlineExceeded}, exitUnavailable},
		{&bourse.Error{Code: bourse.ERateLimited}, exitUnavailable},
	} {
		assert.Equal(t, tt.want, exitStatus(tt.err), "%v", tt.err)
	}
}

// TestJSONErrors: with --json a failure is one JSON object on stderr,
// with the code, the field and the exit status, for scripts.
func TestJSONErrors(t *testing.T) {
	b := startBidMarket(t)
	_, errOut, code := b.bid("ada", "--json", "offer", "--gpus", "64", "--price", "1", "--prepayment", "1")
	assert.Equal(t, exitRefused, code)
	var j jsonError
	require.NoError(t, json.Unmarshal([]byte(errOut), &j), errOut)
	assert.Equal(t, bourse.ENoMatch, j.Code)
	assert.Equal(t, "terms.gpus", j.Field)
	assert.Equal(t, exitRefused, j.ExitStatus)
	assert.Contains(t, j.Error, "try fewer GPUs")

	_, errOut, code = bourseCmd("bid", "--json", "--nats", b.m.URL(), "balance")
	assert.Equal(t, exitUsage, code)
	require.NoError(t, json.Unmarshal([]byte(errOut), &j), errOut)
	assert.Equal(t, bourse.Code("usage"), j.Code)
	assert.Contains(t, j.Error, "--id is required")

	_, errOut, _ = b.bid("ada", "offer", "--gpus", "64", "--price", "1", "--prepayment", "1")
	assert.True(t, strings.HasPrefix(errOut, "bourse: "), "without --json a line: %s", errOut)
}

// TestLogFlags: --log-format json writes one JSON object a line, and
// --log-level drops what is below it; a format there is none of is a
// usage error.
func TestLogFlags(t *testing.T) {
	// The exchange on "mem" warns that its ledger is lost at exit, then
	// fails to reach NATS on a port where nothing listens.
	args := []string{"exchange", "--db", "mem", "--nats", "nats://127.0.0.1:1", "--metrics", ""}
	_, errOut, code := bourseCmd(append([]string{"--log-format", "json"}, args...)...)
	assert.NotEqual(t, 0, code)
	line, _, _ := strings.Cut(errOut, "\n")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(line), &rec), errOut)
	assert.Equal(t, "WARN", rec["level"])
	assert.Contains(t, rec["msg"], "in-memory ledger")

	_, errOut, _ = bourseCmd(append([]string{"--log-level", "error"}, args...)...)
	assert.NotContains(t, errOut, "in-memory ledger")
	assert.Contains(t, errOut, "bourse: connect to NATS")

	t.Setenv("BOURSE_LOG_FORMAT", "json")
	_, errOut, _ = bourseCmd(args...)
	assert.True(t, strings.HasPrefix(errOut, `{"time":`), errOut)

	_, errOut, code = bourseCmd("--log-format", "xml", "version")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, `--log-format "xml": want text or json`)
}

// TestProbes serves the exchange's /healthz and /readyz beside /metrics:
// ready while NATS is connected and the ledger answers, not once NATS is
// gone, while the process stays healthy.
func TestProbes(t *testing.T) {
	ns := natstest.Start(t)
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	require.NoError(t, err)
	defer nc.Close()
	srv := httptest.NewServer(metricsMux(prometheus.NewRegistry(), exchangeReady(nc, memstore.New(mem.New(mem.Options{})))))
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	code, _ := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	code, body := get("/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, _ = get("/metrics")
	assert.Equal(t, http.StatusOK, code)

	ns.Shutdown()
	ns.WaitForShutdown()
	require.Eventually(t, func() bool { return nc.Status() != nats.CONNECTED }, 5*time.Second, 10*time.Millisecond)
	code, body = get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "not ready: NATS is")
	code, _ = get("/healthz")
	assert.Equal(t, http.StatusOK, code)
}
