package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// canaryMarket is a market on a fresh PostgreSQL database, which bourse
// admin canary reads and writes, with servers, and the canary's wallet
// k7 and ada's funded.
type canaryMarket struct {
	*bidMarket
	dbURL string
}

func startCanaryMarket(t *testing.T, servers ...scenario.ServerSpec) *canaryMarket {
	t.Helper()
	dbURL := pgtest.FreshDB(t)
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	store, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	t.Cleanup(store.Close)
	m := markettest.Start(t, market.Config{Store: store, Clients: []scenario.ClientSpec{}, Servers: append([]scenario.ServerSpec{}, servers...)})
	m.Fund("CRED", decimal.NewFromInt(1000), "k7", "ada")
	return &canaryMarket{bidMarket: &bidMarket{t: t, m: m, ledger: m.Ledger}, dbURL: dbURL}
}

// canary runs bourse admin canary as client k7.
func (c *canaryMarket) canary(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	return admin(c.t, c.dbURL, append([]string{"canary", "--nats", c.m.URL(), "--id", "k7", "--currency", "CRED", "--timeout", "5s"}, args...)...)
}

// startLiar runs server id, 4 H100s posted at price, whose synthetic
// jobs' meter says factor times what they use.
func startLiar(t *testing.T, m *markettest.Market, id, price, factor string) {
	t.Helper()
	nc, err := nats.Connect(m.URL(), nats.CustomInboxPrefix(protocol.InboxPrefix(id)))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	var gpus []contract.GPU
	for i := range 4 {
		gpus = append(gpus, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
	}
	a, err := agent.New(agent.Config{Conn: nc, ID: id, Currency: currency.Currency{Code: "CRED", Scale: 2}, GPUs: gpus,
		Policy: server.Posted{P: contract.Flat(decimal.RequireFromString(price))},
		Runner: housetest.LyingMeter{Runner: &server.Synthetic{}, Factor: decimal.RequireFromString(factor)},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// serverRecord is server's record as bourse bid servers --json says it.
func (c *canaryMarket) serverRecord(id string) *protocol.Record {
	c.t.Helper()
	var ss []protocol.Server
	require.NoError(c.t, json.Unmarshal([]byte(c.ok("ada", "--json", "servers")), &ss))
	for _, s := range ss {
		if s.ID == id {
			return s.Record
		}
	}
	c.t.Fatalf("%s is not listed", id)
	return nil
}

// TestAdminCanary: bourse admin canary, as the canary's own client k7,
// offers each server a synthetic job of known use (one GPU busy half of
// 2 s: 1 GPU-second) at its ask and judges what settled. The honest
// server passes; borealis, whose meter says half as much again, fails
// (exit 1), with the deviation; a canary not settled within --wait is
// inconclusive (exit 4); a server that is not live makes no contract
// (exit 3). The results are in the database and join the records, which
// bid servers shows: borealis, the cheaper, is demoted, and ada's offer
// goes to the honest server. The canary paid like any client, and
// nothing in its terms says canary.
func TestAdminCanary(t *testing.T) {
	c := startCanaryMarket(t, markettest.PostedH100s("atlas", 4, decimal.RequireFromString("0.30")))
	startLiar(t, c.m, "borealis", "0.20", "1.5")
	require.Eventually(t, func() bool { return strings.Contains(c.ok("ada", "servers"), "borealis") }, 5*time.Second, 50*time.Millisecond)
	before := c.balance("k7")

	out, errOut, code := c.canary("--server", "atlas", "--server", "borealis", "--duration", "2s")
	assert.Equal(t, exitFailure, code, "one failed: %s", errOut)
	assert.Regexp(t, `(?m)^atlas\tpassed\t0%\tU 1 of 1 GPU-s, T 2s of 2s, charge 0\.30 of 0\.30\tcontract c-\w+$`, out)
	assert.Regexp(t, `(?m)^borealis\tfailed\t\+50%\tU 1\.5 of 1 GPU-s, T 2s of 2s, charge 0\.30 of 0\.20\tcontract c-\w+$`, out)
	assert.Contains(t, errOut, "1 of 2 canaries failed")

	out, errOut, code = c.canary("--json", "--server", "atlas", "--duration", "20s", "--wait", "1s")
	assert.Equal(t, exitUnavailable, code, "inconclusive: %s", errOut)
	var res canary.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, canary.Inconclusive, res.Verdict)
	assert.Contains(t, res.Why, "not settled in time")
	assert.Contains(t, errOut, "1 of 1 canaries inconclusive: run them again")
	assert.NotContains(t, errOut, "is the exchange running", "the exchange answered; the canary did not settle in time")

	_, errOut, code = c.canary("--server", "nowhere")
	assert.Equal(t, exitRefused, code, errOut)
	assert.Contains(t, errOut, "nowhere: canary: no_match: server: nowhere is not a live server of CRED")
	assert.Contains(t, errOut, "1 of 1 servers made no contract of a canary")
	assert.NotContains(t, errOut, "class free", "bourse bid's advice is not a canary's")

	_, errOut, code = c.canary("--server", "atlas", "--utilization", "1.5")
	assert.Equal(t, exitUsage, code, errOut)
	_, errOut, code = c.canary("--server", "atlas", "--duration", "2m", "--time-limit", "1m")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, "shorter than --duration")
	_, errOut, code = c.canary()
	assert.Equal(t, exitUsage, code, errOut)

	// What the canary's contracts were, as any contract: the terms name
	// the server, the job, the price; the client is k7, whose wallet paid.
	var ks []contract.Contract
	out, errOut, code = admin(t, c.dbURL, "contracts", "--json", "--client", "k7")
	require.Zero(t, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &ks))
	require.Len(t, ks, 3)
	for _, k := range ks {
		assert.NotContains(t, strings.ToLower(string(mustJSON(t, protocol.View(k)))), "canary", "the contract a server sees says canary")
		assert.Equal(t, "k7", k.Client)
	}
	assert.True(t, c.balance("k7").Available.LessThan(before.Available), "the canaries were paid for")

	// The records: read by the exchange every 30 s.
	require.Eventually(t, func() bool {
		r := c.serverRecord("borealis")
		return r != nil && r.Canaries != nil && r.Demoted
	}, 40*time.Second, 250*time.Millisecond, "borealis's failed canary did not demote it")
	liar := c.serverRecord("borealis")
	assert.Equal(t, 1, liar.Canaries.Failed)
	assert.Equal(t, "0.5", liar.Canaries.Worst.String())
	honest := c.serverRecord("atlas")
	require.NotNil(t, honest.Canaries)
	assert.Equal(t, 1, honest.Canaries.Passed)
	assert.False(t, honest.Demoted, "an inconclusive canary is no one's fault")
	table := c.ok("ada", "servers")
	assert.Regexp(t, `(?m)^borealis .*canaries 1 failed \(worst \+50%\) in 7d, DEMOTED`, table)
	assert.Regexp(t, `(?m)^atlas .*canaries 1 passed, 1 inconclusive in 7d `, table)
	k := c.offerJSON("ada", "--gpus", "1", "--model", "H100", "--price", "0.40", "--duration", "1s", "--time-limit", "1m")
	assert.Equal(t, "atlas", k.Server, "the liar asks less, but its record sends offers elsewhere")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// TestAdminCanaryProgram: a canary of a program on a process server,
// metered by NVML (go-nvml's mock, in which every process keeps its GPU
// half busy): --job names the program, --utilization 0.5 its truth of
// unknown length, and the contract settles on what NVML measured, within
// the tolerance that covers its sampling. A truth of 0.9 (a meter that
// says half of what the job used, as this one would of such a job)
// fails. This is the metering path, not a GPU: what a real program uses
// of a real GPU is for its operator to know.
func TestAdminCanaryProgram(t *testing.T) {
	c := startCanaryMarket(t)
	job := os.Args[0]
	stderr := startServer(t, busyNVML, "id: gpu1\nnvml: required\noutbox_dir: "+t.TempDir()+`
nats: {url: `+c.m.URL()+`}
currency: {code: CRED, scale: 2}
policy: {kind: reserve}
heartbeat: 100ms
sample_every: 50ms
runner: {kind: process, allowed: [`+job+`], output_dir: `+t.TempDir()+`, grace: 2s}
`)
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "msg=registered") }, 10*time.Second, 50*time.Millisecond, "%s", stderr)
	spec := filepath.Join(t.TempDir(), "train.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("command: "+job+"\nargs: ["+jobFlag+", train, \"10\"]\n"), 0o600))

	run := func(utilization string) (string, string, int) {
		return c.canary("--server", "gpu1", "--job", spec, "--utilization", utilization, "--duration", "0", "--time-limit", "1m",
			"--tolerance", "0.4", "--price", "0.5")
	}
	out, errOut, code := run("0.5")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Regexp(t, regexp.MustCompile(`(?m)^gpu1\tpassed\t`), out)
	out, errOut, code = run("0.9")
	assert.Equal(t, exitFailure, code, "%s%s", out, errOut)
	assert.Regexp(t, regexp.MustCompile(`(?m)^gpu1\tfailed\t-`), out)

	_, errOut, code = c.canary("--server", "gpu1", "--job", spec, "--duration", "0")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--time-limit")
}
