package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/workload"
)

// botJobs is the demo's bots' work as a simulator workload: each client
// runs Parallel loops, and each loop makes up a job as the demo's loop
// does (scenario.ClientSpec.Job), then the next once it could have run and
// its bot thought for 100–400 ms, until horizon. The demo's loop waits for
// a contract to end before its next job; here the next arrives on time
// whatever became of the last, so the market sees at least the demand the
// demo's bots make.
type botJobs struct {
	jobs []workload.Job
	next int
}

func newBotJobs(specs []scenario.ClientSpec, horizon time.Duration, seed uint64) *botJobs {
	var jobs []workload.Job
	for ci, s := range specs {
		rng := rand.New(rand.NewPCG(seed, uint64(ci)))
		n := 0
		for loop := range max(s.Parallel, 1) {
			at := time.Duration(loop) * 100 * time.Millisecond
			for at < horizon {
				n++
				j := s.Job(rng, n, 1)
				jobs = append(jobs, workload.Job{ID: fmt.Sprintf("%s-%d", s.ID, n), Client: s.ID, Arrival: at, GPUs: j.GPUs, Model: j.Class.Model,
					Duration: j.Runtime, Utilization: j.Utilization.InexactFloat64()})
				at += j.Runtime + time.Duration(100+rng.IntN(300))*time.Millisecond
			}
		}
	}
	slices.SortStableFunc(jobs, func(a, b workload.Job) int { return int(a.Arrival - b.Arrival) })
	return &botJobs{jobs: jobs}
}

func (b *botJobs) Next() (workload.Job, error) {
	if b.next == len(b.jobs) {
		return workload.Job{}, io.EOF
	}
	b.next++
	return b.jobs[b.next-1], nil
}

// economy runs clients on the demo's servers for 30 virtual minutes and
// returns the utilisation of each minute.
func economy(t *testing.T, clients []scenario.ClientSpec) []float64 {
	t.Helper()
	const horizon = 30 * time.Minute
	for i := range clients {
		clients[i].Patience = 10 * time.Second // a bot moves on to its next job
	}
	m, err := sim.New(sim.Config{Servers: scenario.DefaultServers(), Clients: clients, Workload: newBotJobs(clients, horizon, 1),
		Seed: 1, Horizon: horizon, Limit: horizon, Sample: time.Minute, ReadingEvery: time.Second})
	require.NoError(t, err)
	r, err := m.Run(context.Background())
	require.NoError(t, err)
	var util []float64
	for _, p := range r.Series {
		util = append(util, p.Utilization)
	}
	t.Logf("%+v", r.Summary)
	return util
}

// TestDemoEconomy: the demo's market keeps trading for as long as it
// runs. Its bots spend their budgets within minutes (with --duration 5m
// they were broke after about 2.5, utilisation falling to 3–26%), so each
// is paid an allowance towards its budget; whether that pays for what
// they buy cannot be watched for 30 real minutes in CI, so the same
// clients (demoClients) trade on the demo's servers in the simulator, the
// same House, nodes and strategies on a virtual clock, for 30 virtual
// minutes, with at least the demand the demo's bots make (botJobs). The
// market must be as busy in its last 5 minutes as in its first 5. (The
// simulator applies allowances and budgets, not the demo's caps: cyd's and
// gus's only lower what they spend.)
func TestDemoEconomy(t *testing.T) {
	util := economy(t, demoClients())
	t.Logf("utilisation by minute: %.2f", util)
	require.Len(t, util, 30)
	first, last := mean(util[:5]), mean(util[25:])
	require.Greater(t, first, 0.3, "the market trades at all")
	require.GreaterOrEqual(t, last, 0.9*first, "as busy in the last 5 minutes (%.2f) as in the first 5 (%.2f)", last, first)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
