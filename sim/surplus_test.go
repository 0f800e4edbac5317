package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/workload"
)

// TestSurplusWithPreemption is docs/sim.md's definitions on a job that
// is preempted and never resumed: surplus is the clients' value ×
// GPU-seconds used less what they paid, welfare the value of what ran,
// for every contract however it ended. One GPU; "low" runs a preemptible
// job from 0s, bidding half its value (0.01 of 0.02 a GPU-second);
// "high" arrives at 100s with a guaranteed job bidding 0.025, which
// preempts it; low's patience is over by then, so its job is given up.
// By hand: low used 100 GPU-s worth 2.00 and paid 0.01·100 = 1.00; high
// used 500 worth 25.00 and paid 0.025·500 = 12.50.
func TestSurplusWithPreemption(t *testing.T) {
	reserve := contract.Flat(dectest.D("0.01"))
	servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 1,
		Policy: server.Preempting{Base: server.Posted{P: reserve}}}}
	clients := []scenario.ClientSpec{
		{ID: "low", Budget: dectest.D("1000"), Value: dectest.D("0.02"), Strategy: strategy.Cheapest{}, Patience: time.Minute},
		{ID: "high", Budget: dectest.D("1000"), Value: dectest.D("0.05"), Strategy: strategy.Cheapest{}},
	}
	jobs := []workload.Job{
		{ID: "bg", Client: "low", GPUs: 1, Duration: 1000 * time.Second, Utilization: 1, Preemptible: true},
		{ID: "fg", Client: "high", Arrival: 100 * time.Second, GPUs: 1, Duration: 500 * time.Second, Utilization: 1},
	}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	s := r.Summary
	require.Equal(t, 1, s.Preempted)
	require.Equal(t, 1, s.Completed)
	require.Equal(t, 1, s.Rejected, "the preempted job was never resumed")

	// From the contracts, as the docs define it.
	cs, err := m.Contracts(context.Background())
	require.NoError(t, err)
	require.Len(t, cs, 2)
	value := map[string]float64{"low": 0.02, "high": 0.05}
	var welfare, revenue float64
	for _, c := range cs {
		require.Equal(t, contract.StateSettled, c.State)
		welfare += value[c.Client] * c.Reading.U.InexactFloat64()
		revenue += c.Charge.InexactFloat64()
		want := map[string]contract.Reason{"low": contract.ReasonPreempted, "high": contract.ReasonCompleted}[c.Client]
		assert.Equal(t, want, c.Reason, "%s's contract", c.Client)
	}
	assert.InDelta(t, welfare, s.Welfare, 1e-9)
	assert.InDelta(t, welfare-revenue, s.Surplus, 1e-9)

	// By hand.
	assert.InDelta(t, 2.00+25.00, s.Welfare, 1e-9)
	assert.InDelta(t, 1.00+12.50, s.Revenue, 1e-9)
	assert.InDelta(t, (2.00-1.00)+(25.00-12.50), s.Surplus, 1e-9)
	// The reserve, 0.01 a GPU-second, on the 600 GPU-seconds used: high
	// bid above it and paid its bid.
	assert.InDelta(t, 0.01, s.ReserveIndex, 1e-12)
	assert.InDelta(t, 13.50/600, s.PriceIndex, 1e-12)
	for _, c := range r.Clients {
		want := map[string]float64{"low": 1.00, "high": 12.50}[c.ID]
		assert.InDelta(t, want, c.Surplus, 1e-9, "%s's surplus", c.ID)
	}
}

// TestUtilisationToLastJobsEnd: utilisation is GPUs allocated over GPUs ×
// the run's length, which ends with the last job: one job on one of two
// GPUs from 10s to 100s is 45%, however long after it the engine noticed
// that nothing was left to do (its sweep every reading interval, a
// minute, which would make it 37.5%).
func TestUtilisationToLastJobsEnd(t *testing.T) {
	servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 2, Policy: server.Posted{P: contract.Flat(dectest.D("0.01"))}}}
	clients := []scenario.ClientSpec{{ID: "ada", Budget: dectest.D("1000"), Value: dectest.D("0.01"), Strategy: strategy.Fixed{}}}
	jobs := []workload.Job{{ID: "j", Client: "ada", Arrival: 10 * time.Second, GPUs: 1, Duration: 90 * time.Second, Utilization: 1}}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, r.Summary.Completed)
	// 90 GPU-s of 2 GPUs × 100 s: the run starts at 0, the job ends at 100s.
	assert.InDelta(t, 0.45, r.Summary.Utilization, 1e-9)
}
