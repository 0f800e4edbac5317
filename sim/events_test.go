package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
)

// TestEventsAsPolling: servers that speak only when their state changes
// (the default) make the same market as servers that tick, heartbeat and
// send readings every reading interval as their agents do over NATS
// (Config.Poll): the same results and the same contract log, byte for
// byte, on the demo's market, on generated workloads with preemption
// and surge prices and clients of every strategy, and on traces with
// preemption and fair use; in fewer events, far fewer when servers idle.
func TestEventsAsPolling(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func() sim.Config
	}{
		{"demo", func() sim.Config {
			return sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: richClients(), Seed: 4,
				Workload: newDemoJobs(4, 3000, 30*time.Second)}
		}},
		{"posted-vs-surge/preempting", func() sim.Config { return fileConfig(t, "../examples/sim/posted-vs-surge.yaml", "preempting", 2, 1500) }},
		{"posted-vs-surge/surge", func() sim.Config { return fileConfig(t, "../examples/sim/posted-vs-surge.yaml", "surge", 1, 1500) }},
		{"openb-sample/preempting", func() sim.Config { return fileConfig(t, "../examples/sim/openb-sample.yaml", "preempting", 1, 0) }},
		{"helios-fairshare/fair-use", func() sim.Config { return fileConfig(t, "../examples/sim/helios-fairshare.yaml", "fair-use", 1, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(poll bool) ([]byte, uint64) {
				var log bytes.Buffer
				cfg := tc.cfg()
				cfg.Poll, cfg.Log = poll, &log
				m, err := sim.New(cfg)
				require.NoError(t, err)
				r, err := m.Run(context.Background())
				require.NoError(t, err)
				js, err := json.Marshal(r)
				require.NoError(t, err)
				return append(log.Bytes(), js...), m.Engine().Events()
			}
			polled, pollEvents := run(true)
			evented, events := run(false)
			require.True(t, bytes.Equal(polled, evented), "the same market whether servers poll or speak when their state changes")
			assert.Less(t, events, pollEvents)
			t.Logf("%d events against %d polling", events, pollEvents)
		})
	}
}

// fileConfig is a scenario file's run of one policy and seed, cut to jobs
// (0: all).
func fileConfig(t *testing.T, path, policy string, seed uint64, jobs int) sim.Config {
	t.Helper()
	f, err := scenario.Load(path)
	require.NoError(t, err)
	if jobs > 0 {
		f.Workload.Jobs = jobs
	}
	plans, err := sim.Plans(f, []string{policy}, sim.PlanOptions{Seeds: []uint64{seed}})
	require.NoError(t, err)
	cfg, closer, err := plans[0].Build()
	require.NoError(t, err)
	t.Cleanup(func() { _ = closer() })
	cfg.Policy, cfg.Seed = policy, seed
	return cfg
}
