package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
)

// TestServerJSONLog: under --log-format json every line bourse server
// writes is a JSON object, its start lines (meter:, policy:, jobs:) too;
// durations are written as "1s", not nanoseconds; no Go type's name
// stands for a value.
func TestServerJSONLog(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	config := writeConfig(t, "server.yaml", "id: jsonlog\nnats: {url: "+b.m.URL()+"}\nnvml: off\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\n"+
		"heartbeat: 100ms\nmeter_fallback: full_use\noutbox_dir: "+t.TempDir()+"\n"+
		"runner: {kind: process, allowed: [/bin/sleep], output_dir: "+t.TempDir()+", job_users: []}\n")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--log-format", "json", "server", "--config", config}, &stdout, &stderr)
	}()
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), `"msg":"registered"`) }, 10*time.Second, 20*time.Millisecond, "%s", &stderr)
	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop")
	}

	msgs := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "not JSON: %s", line)
		msg, _ := rec["msg"].(string)
		msgs[strings.SplitN(msg, ":", 2)[0]] = rec
		assert.NotContains(t, line, `":"*`, "a Go type's name: %s", line)
	}
	for _, start := range []string{"meter", "policy", "jobs"} {
		assert.Contains(t, msgs, start, "the %s: line, as a record", start)
	}
	assert.Contains(t, msgs["meter"]["msg"], "meter: full_use: nvml is off")
	starting := msgs["server starting"]
	require.NotNil(t, starting)
	assert.Equal(t, "process", starting["runner"])
	assert.Equal(t, "1s", msgs["registered"]["heartbeat"], "a duration as text (the exchange's heartbeat)")
}
