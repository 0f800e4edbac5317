package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// freeAddr is a loopback address no one listens on, for a metrics server.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestServerLearning runs bourse server with a learning policy on a real
// market (NATS, an exchange, a bidder): it says at its start what it
// learns over, chooses a price every epoch and logs what it believes,
// shows its beliefs at /metrics (the multiple it posts, the contracts won
// at each level), and leaves what it learned beside the bookings.
func TestServerLearning(t *testing.T) {
	m := markettest.Start(t, market.Config{Servers: []scenario.ServerSpec{}, Clients: scenario.DefaultClients()[:1], JobScale: 0.3})
	outbox, metrics := t.TempDir(), freeAddr(t)
	config := writeConfig(t, "server.yaml", `
outbox_dir: `+outbox+`
metrics: `+metrics+`
id: gpu-1
nats: {url: `+m.URL()+`}
currency: {code: CRED, scale: 2}
nvml: off
gpus: [{count: 2, model: H100, memory_mib: 81920}]
policy: {kind: learning, p: [["0", "0.001"]], floor: "0.5", ceiling: "2", levels: 3, epoch: 1s}
runner: {kind: synthetic}
heartbeat: 200ms
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"server", "--config", config}, &stdout, &stderr) }()

	scrape := func() string {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	started := regexp.MustCompile(`(?m)^bourse_server_learning_starts_total\{level="[0-9.]+",server="gpu-1"\} [1-9]`)
	deadline := time.Now().Add(30 * time.Second)
	for !started.MatchString(scrape()) {
		select {
		case code := <-exited:
			t.Fatalf("the server exited with %d: %s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no contract started at any level in 30s:\n%s\nserver log:\n%s", scrape(), stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	body := scrape()
	assert.Regexp(t, `(?m)^bourse_server_learning_multiplier\{server="gpu-1"\} (0\.5|1|2)$`, body, "it posts a level of its grid")
	assert.Regexp(t, `(?m)^bourse_server_learning_earn_per_hour\{level="1",server="gpu-1"\} `, body)
	m.Close()
	cancel()
	select {
	case code := <-exited:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}
	out := stdout.String() + stderr.String()
	assert.Contains(t, out, `policy: learning: takes offers paying at least p 0:0.001 per GPU-second of use by rate times a multiple; it learns which multiple earns most (×0.5 ×1 ×2), posting one every 1s`)
	assert.Contains(t, out, `msg="learning: a new epoch"`)
	data, err := os.ReadFile(filepath.Join(outbox, "learning.json"))
	require.NoError(t, err, "what it learned is kept beside the bookings")
	assert.Regexp(t, `"starts":[1-9]`, string(data), "with the contracts it won")
}

// TestLearningLineGrows: the start line says when epochs grow.
func TestLearningLineGrows(t *testing.T) {
	l, err := server.NewLearning(server.LearningConfig{Base: server.Posted{P: contract.Flat(dectest.D("0.001"))},
		Levels: 2, Epoch: 10 * time.Minute, MaxEpoch: 2 * time.Hour})
	require.NoError(t, err)
	assert.Contains(t, learningLine(l), "(×0.5 ×4), posting one for 10m0s at first, up to 2h0m0s as it settles")
}
