package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// TestLearningServersLearnApart runs examples/sim/known-demand.yaml with
// its one server made two replicas, each learning: each has a learner of
// its own, seeded apart, that chose prices epoch after epoch on the
// node's Wake though nothing else happened then, and told the House of
// its new ask (the reserve index moves off the base price). The same seed
// runs the same, to the byte of its results.
func TestLearningServersLearnApart(t *testing.T) {
	run := func() (*Simulation, string) {
		f, err := scenario.Load("../examples/sim/known-demand.yaml")
		require.NoError(t, err)
		f.Servers[0].Replicas = 2
		f.Workload.Jobs = 600
		plans, err := Plans(f, []string{"learning"}, PlanOptions{Seeds: []uint64{3}, TrackEvery: 100})
		require.NoError(t, err)
		cfg, closer, err := plans[0].Build()
		require.NoError(t, err)
		t.Cleanup(func() { _ = closer() })
		cfg.Seed = 3
		m, err := New(cfg)
		require.NoError(t, err)
		r, err := m.Run(context.Background())
		require.NoError(t, err)
		assert.Len(t, r.Track, 5, "a mark every 100 arrivals before the 600th")
		assert.NotEqual(t, "3.60", fmt.Sprintf("%.2f", 3600*r.Summary.ReserveIndex), "the servers posted other prices than the base")
		r.Summary.Wall, r.Summary.JobsPerSec = 0, 0
		js, err := json.Marshal(r)
		require.NoError(t, err)
		return m, string(js)
	}
	m, first := run()
	a, b := server.LearnerOf(m.reserves.policies["h100-1"]), server.LearnerOf(m.reserves.policies["h100-2"])
	require.NotNil(t, a)
	require.NotNil(t, b)
	assert.NotSame(t, a, b, "each server learns alone")
	assert.NotEqual(t, a.Config().Seed, b.Config().Seed)
	hours := m.e.Now().Sub(m.cfg.Start).Hours()
	for _, l := range []*server.Learning{a, b} {
		assert.GreaterOrEqual(t, float64(l.Epochs()), 0.9*hours*12, "an epoch every five minutes of the run's %.0f hours", hours)
	}
	_, second := run()
	assert.Equal(t, first, second)
}
