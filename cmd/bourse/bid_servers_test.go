package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestBidServers lists the live servers as they say of themselves: GPUs
// free and in all, runner, meter, programs (a process runner's are
// TestRealJobs/Servers').
func TestBidServers(t *testing.T) {
	b := startBidMarket(t)
	out := b.ok("ada", "servers")
	assert.Regexp(t, `(?m)^SERVER +CURRENCY +GPUS +FREE +MODELS +RUNNER +METER +RUNS +POLICY +ASK +RECORD +HEARD$`, out)
	assert.Regexp(t, `(?m)^atlas +CRED +16 +16 +16× H100 80 GiB +synthetic +synthetic +\(synthetic jobs\) +\S.* +0\.3/GPU-s \(1080\.00/GPU-h\) +- +\S+ ago$`, out, "no contract yet: no record")

	b.offerJSON("ada", "--gpus", "3", "--model", "H100", "--price", "0.40", "--duration", "20s", "--time-limit", "1m")
	var ss []protocol.Server
	require.Eventually(t, func() bool {
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "servers")), &ss))
		return len(ss) == 1 && ss[0].Free == 13
	}, 10*time.Second, 50*time.Millisecond, "the heartbeat after the contract says 13 free: %+v", ss)
	s := ss[0]
	assert.Equal(t, "atlas", s.ID)
	assert.Equal(t, 16, s.Total)
	assert.Equal(t, []protocol.GPUCount{{Model: "H100", MemoryMiB: 81920, Count: 16}}, s.GPUs)
	require.NotNil(t, s.Runs)
	assert.Equal(t, protocol.RunnerSynthetic, s.Runs.Runner)
	assert.Equal(t, contract.MeterSynthetic, s.Runs.Meter)
	// Its ask, as the exchange routes by it: the price it posts, and the
	// GPUs free after the contract.
	require.NotNil(t, s.Ask, "the ask atlas publishes")
	require.Len(t, s.Ask.Classes, 1)
	assert.Equal(t, "H100", s.Ask.Classes[0].Model)
	assert.Equal(t, 13, s.Ask.Classes[0].Free)
	assert.True(t, s.Ask.Classes[0].P.Equal(contract.Flat(decimal.RequireFromString("0.30"))), "%v", s.Ask.Classes[0].P)

	out = b.ok("ada", "--currency", "EUR", "servers")
	assert.Equal(t, "no live server in EUR: a server speaks every second once it runs (bourse server)\n", out)
	assert.Contains(t, b.ok("ada", "--currency", "EUR", "servers", "--all"), "atlas")
}

// TestRecordText: how bourse bid servers says a server kept its word.
func TestRecordText(t *testing.T) {
	assert.Equal(t, "-", recordText(nil))
	w := contract.Duration(time.Hour)
	assert.Equal(t, "started 9 of 10 in 1h0m0s", recordText(&protocol.Record{Window: w, Accepted: 10, Started: 9}))
	assert.Equal(t, "started 1 of 5, 4 never, 1 lost in 1h0m0s, DEMOTED",
		recordText(&protocol.Record{Window: w, Accepted: 5, Started: 1, NotStarted: 4, Lost: 1, Demoted: true}))
	week := contract.Duration(7 * 24 * time.Hour)
	worst := decimal.RequireFromString("0.5")
	assert.Equal(t, "started 0 of 0 in 1h0m0s; canaries 3 passed (1 since the last failure), 1 failed (worst +50%), 2 inconclusive in 7d, DEMOTED",
		recordText(&protocol.Record{Window: w, Canaries: &protocol.Canaries{Window: week, Run: 6, Passed: 3, Failed: 1, Inconclusive: 2, PassedSince: 1, Worst: &worst},
			Demoted: true}))
	assert.Equal(t, "started 0 of 0 in 1h0m0s; canaries 1 failed (worst +50%) in 7d, DEMOTED",
		recordText(&protocol.Record{Window: w, Canaries: &protocol.Canaries{Window: week, Run: 1, Failed: 1, Worst: &worst}, Demoted: true}))
	assert.Equal(t, "started 0 of 0 in 1h0m0s; canaries 1 inconclusive in 7d",
		recordText(&protocol.Record{Window: w, Canaries: &protocol.Canaries{Window: week, Run: 1, Inconclusive: 1, Worst: &worst}}),
		"a worst deviation with no conclusive canary, which the exchange never sends, is not shown")
	zero := decimal.Zero
	assert.Equal(t, "started 3 of 3 in 1h0m0s; canaries 2 passed in 7d",
		recordText(&protocol.Record{Window: w, Accepted: 3, Started: 3, Canaries: &protocol.Canaries{Window: week, Run: 2, Passed: 2, Worst: &zero}}))
}

// TestRunsText: what bourse bid servers says a server runs.
func TestRunsText(t *testing.T) {
	for _, tt := range []struct {
		runs protocol.Runs
		want string
	}{
		{protocol.Runs{Runner: protocol.RunnerSynthetic}, "(synthetic jobs)"},
		{protocol.Runs{Runner: protocol.RunnerProcess}, "none"},
		{protocol.Runs{Runner: protocol.RunnerProcess, Programs: []string{"a", "b", "c", "d", "e"}}, "a, b, c and 2 more"},
		{protocol.Runs{Runner: protocol.RunnerContainer}, "no image"},
		{protocol.Runs{Runner: protocol.RunnerContainer, Images: &protocol.Images{Allowed: []string{"ghcr.io/acme"}, MaxBytes: 2 << 30}},
			"images from ghcr.io/acme (at most 2048 MiB)"},
		{protocol.Runs{Runner: protocol.RunnerContainer, Images: &protocol.Images{Allowed: []string{"a.io", "b.io", "c.io", "d.io"}}},
			"images from a.io, b.io, c.io and 1 more"},
		{protocol.Runs{Runner: protocol.RunnerProcess, Programs: []string{"a"}, Files: &protocol.Files{MaxBytes: 1 << 30}}, "a; files up to 1024 MiB"},
	} {
		assert.Equal(t, tt.want, runsText(&tt.runs))
	}
}
