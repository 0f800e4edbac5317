package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
)

func demoPlans(n int, fail bool) []sim.Plan {
	var plans []sim.Plan
	for i := range n {
		seed := uint64(i + 1)
		plans = append(plans, sim.Plan{Policy: "demo", Seed: seed, Build: func() (sim.Config, func() error, error) {
			if fail && seed == 2 {
				return sim.Config{}, nil, errors.New("no such trace")
			}
			return sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: richClients(),
				Workload: newDemoJobs(seed, 500, 30*time.Second)}, nil, nil
		}})
	}
	return plans
}

func richClients() []scenario.ClientSpec {
	cs := scenario.DefaultClients()
	for i := range cs {
		cs[i].Budget = cs[i].Budget.Mul(dectest.D("100000"))
	}
	return cs
}

// TestRunAllInOrder: runs on several goroutines give the results of one
// goroutine, in the plans' order.
func TestRunAllInOrder(t *testing.T) {
	one, err := sim.RunAll(context.Background(), demoPlans(4, false), 1, nil)
	require.NoError(t, err)
	many, err := sim.RunAll(context.Background(), demoPlans(4, false), 4, nil)
	require.NoError(t, err)
	a, _ := json.Marshal(one)
	b, _ := json.Marshal(many)
	assert.JSONEq(t, string(a), string(b))
	for i, r := range many {
		assert.Equal(t, uint64(i+1), r.Seed)
		assert.Equal(t, 500, r.Summary.Jobs)
		assert.Positive(t, r.Summary.JobsPerSec)
	}
	assert.NotEqual(t, many[0].Summary, many[1].Summary, "seeds differ")
}

func TestRunAllFails(t *testing.T) {
	_, err := sim.RunAll(context.Background(), demoPlans(3, true), 2, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "seed 2: no such trace")
}

// TestRunAllInterrupted: once its context is done, RunAll stops the run
// under way within a second, starts no other, and returns that run as far
// as it went, marked Interrupted, with ErrInterrupted.
func TestRunAllInterrupted(t *testing.T) {
	plans := demoPlans(3, false)
	for i := range plans {
		seed := plans[i].Seed
		plans[i].Build = func() (sim.Config, func() error, error) {
			return sim.Config{Scenario: "demo", Servers: scenario.DefaultServers(), Clients: richClients(), ReadingEvery: time.Second, Sample: time.Minute,
				Workload: newDemoJobs(seed, 10_000_000, 30*time.Second)}, nil, nil
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var cancelled time.Time
	time.AfterFunc(500*time.Millisecond, func() { cancelled = time.Now(); cancel() })
	rs, err := sim.RunAll(ctx, plans, 1, nil)
	took := time.Since(cancelled)
	require.ErrorIs(t, err, sim.ErrInterrupted)
	assert.Less(t, took, time.Second, "stopped within a second")
	require.Len(t, rs, 1, "the run under way; the others never started")
	assert.True(t, rs[0].Interrupted)
	assert.Equal(t, uint64(1), rs[0].Seed)
	assert.Positive(t, rs[0].Summary.Jobs)
	assert.Less(t, rs[0].Summary.Jobs, 10_000_000)
	assert.NotEmpty(t, rs[0].Series, "what it sampled so far")
}
