package sim_test

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// TestResumedJobRunsWhatIsLeft: a preempted job resumes for exactly what
// it has left, not for that rounded to the second. One GPU; "low"'s
// preemptible job of 100 s arrives at 0.4 s and starts at once; "high"'s
// guaranteed job of 10 s arrives at 50 s and preempts it after 49.6 s.
// When high's job ends at 60 s, low's resumes with 50.4 s left and ends
// at 110.4 s: its two contracts ran 49.6 + 50.4 = 100 s, its run time.
// Resumed for 50 s, it would be counted completed with 0.4 s of its work
// never run, and its contract log would match no job of the workload
// (issue 45: a fractional start came from a prepayment that ran out
// between whole seconds).
func TestResumedJobRunsWhatIsLeft(t *testing.T) {
	reserve := contract.Flat(dectest.D("0.01"))
	servers := []scenario.ServerSpec{{ID: "s", Model: "H100", Count: 1,
		Policy: server.Preempting{Base: server.Posted{P: reserve}}}}
	clients := []scenario.ClientSpec{
		{ID: "low", Budget: dectest.D("1000"), Value: dectest.D("0.02"), Strategy: strategy.Cheapest{}},
		{ID: "high", Budget: dectest.D("1000"), Value: dectest.D("0.05"), Strategy: strategy.Cheapest{}},
	}
	jobs := []workload.Job{
		{ID: "bg", Client: "low", Arrival: 400 * time.Millisecond, GPUs: 1, Duration: 100 * time.Second, Utilization: 1, Preemptible: true},
		{ID: "fg", Client: "high", Arrival: 50 * time.Second, GPUs: 1, Duration: 10 * time.Second, Utilization: 1},
	}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	s := r.Summary
	require.Equal(t, 1, s.Preempted)
	require.Equal(t, 2, s.Completed)
	require.Zero(t, s.Rejected)

	cs, err := m.Contracts(context.Background())
	require.NoError(t, err)
	var low []contract.Contract
	for _, c := range cs {
		if c.Client == "low" {
			low = append(low, c)
		}
	}
	require.Len(t, low, 2)
	if low[0].StartedAt.After(low[1].StartedAt) {
		low[0], low[1] = low[1], low[0]
	}
	first, resumed := low[0], low[1]
	assert.Equal(t, contract.ReasonPreempted, first.Reason)
	assert.Equal(t, 49600*time.Millisecond, time.Duration(first.Reading.T), "ran from 0.4 s to 50 s")
	assert.Equal(t, contract.ReasonCompleted, resumed.Reason)
	assert.Equal(t, 50400*time.Millisecond, resumed.Terms.Job.Profile.Duration, "offered for what was left")
	assert.Equal(t, 50400*time.Millisecond, time.Duration(resumed.Reading.T), "ran what was left")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	assert.Equal(t, 110400*time.Millisecond, resumed.SettledAt.Sub(start), "ended when its 100 s were used up")
}

// TestEveryJobInTheLog: every job of a market with preemptions either has
// one completed contract, after which the contracts it ran under add up
// to its run time exactly, or is counted not completed; the summary's
// counts are the contract log's. Each job has a client of its own, so
// that a client's contracts are its job's. Arrivals fall between whole
// seconds, as starts do after a prepayment runs out or a preemption, and
// cheap preemptible jobs share four GPUs with dear guaranteed ones.
func TestEveryJobInTheLog(t *testing.T) {
	const n = 300
	reserve := contract.Flat(dectest.D("0.012"))
	policy := server.Preempting{Base: server.Posted{P: reserve}}
	servers := []scenario.ServerSpec{{ID: "s1", Model: "H100", Count: 2, Policy: policy}, {ID: "s2", Model: "H100", Count: 2, Policy: policy}}
	rng := rand.New(rand.NewPCG(45, 6))
	var (
		clients []scenario.ClientSpec
		jobs    []workload.Job
		at      time.Duration
	)
	for i := range n {
		id := fmt.Sprintf("c%03d", i)
		preemptible := rng.IntN(2) == 0
		value := dectest.D("0.05")
		if preemptible {
			value = dectest.D("0.02")
		}
		clients = append(clients, scenario.ClientSpec{ID: id, Budget: dectest.D("1000"), Value: value,
			Strategy: strategy.Cheapest{}, Patience: time.Hour})
		at += time.Duration(rng.IntN(40_000)) * time.Millisecond
		jobs = append(jobs, workload.Job{ID: "j" + id, Client: id, Arrival: at, GPUs: 1 + rng.IntN(2),
			Duration: time.Duration(10_000+rng.IntN(290_000)) * time.Millisecond, Utilization: 1, Preemptible: preemptible})
	}
	m, err := sim.New(sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	s := r.Summary
	require.Equal(t, n, s.Jobs)
	require.Greater(t, s.Preempted, n/10, "a market with preemptions")

	cs, err := m.Contracts(context.Background())
	require.NoError(t, err)
	byClient := map[string][]contract.Contract{}
	for _, c := range cs {
		byClient[c.Client] = append(byClient[c.Client], c)
	}
	completed := map[string]int{}
	for _, c := range r.Clients {
		completed[c.ID] = c.Completed
	}
	done := 0
	for _, j := range jobs {
		var ran time.Duration
		finished := 0
		for _, c := range byClient[j.Client] {
			if c.Reading != nil {
				ran += time.Duration(c.Reading.T)
			}
			if c.Reason == contract.ReasonCompleted {
				finished++
			}
		}
		require.LessOrEqual(t, finished, 1, "%s: completed twice", j.ID)
		assert.Equal(t, finished, completed[j.Client], "%s: counted completed %d times, by %d completed contracts", j.ID, completed[j.Client], finished)
		if finished == 1 {
			done++
			assert.Equal(t, j.Duration, ran, "%s: its contracts ran %v of its %v", j.ID, ran, j.Duration)
		}
	}
	assert.Equal(t, done, s.Completed, "jobs completed, by the contract log")
	assert.Equal(t, n-done, s.Rejected, "jobs not completed, by the contract log")
	t.Logf("%d jobs: %d completed, %d not, %d preemptions, %d contracts", n, s.Completed, s.Rejected, s.Preempted, len(cs))
}
