package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
)

// TestServerMetrics: the GPU server's agent serves its own probes and
// metrics (--metrics), as the exchange does: /healthz while it serves,
// /readyz once NATS is up and the exchange has registered it, and
// /metrics with its GPUs, those free and its running contracts.
func TestServerMetrics(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	stderr := startServer(t, noNVML, "id: gpu9\nnats: {url: "+b.m.URL()+"}\nnvml: off\ngpus: [{count: 2, model: L4, memory_mib: 24576}]\nheartbeat: 100ms\nmetrics: "+addr+"\n")
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool { code, _ := get("/readyz"); return code == http.StatusOK }, 10*time.Second, 20*time.Millisecond, "%s", stderr)
	code, body := get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok\n", body)
	code, body = get("/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, want := range []string{`bourse_server_gpus{server="gpu9"} 2`, `bourse_server_gpus_free{server="gpu9"} 2`,
		`bourse_server_contracts_running{server="gpu9"} 0`, `bourse_server_nats_connected{server="gpu9"} 1`, `bourse_server_registered{server="gpu9"} 1`} {
		assert.True(t, strings.Contains(body, want+"\n"), "/metrics lacks %s:\n%s", want, body)
	}

	k := b.offerJSON("ada", "--gpus", "1", "--model", "L4", "--price", "0.4", "--duration", "30s", "--time-limit", "1m")
	require.Eventually(t, func() bool {
		_, body := get("/metrics")
		return strings.Contains(body, `bourse_server_contracts_running{server="gpu9"} 1`) && strings.Contains(body, `bourse_server_gpus_free{server="gpu9"} 1`)
	}, 10*time.Second, 20*time.Millisecond, "the contract %s runs", k.ID)
	b.ok("ada", "kill", k.ID)
}
