package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/workload"
)

// TestNoServerFits: jobs no server can take (their model is not in the
// market, or they want more GPUs than any server of it has) are counted
// as no_match; a run none of whose jobs fit is an error rather than a
// market that completed nothing and exits 0.
func TestNoServerFits(t *testing.T) {
	servers := []scenario.ServerSpec{{ID: "a", Model: "A100", Count: 4, Policy: server.Posted{P: contract.Flat(dectest.D("0.01"))}}}
	clients := []scenario.ClientSpec{{ID: "ada", Budget: dectest.D("1000"), Value: dectest.D("0.01"), Strategy: strategy.Fixed{}}}
	run := func(jobs ...workload.Job) (sim.Config, error) {
		cfg := sim.Config{Servers: servers, Clients: clients, Workload: &jobList{jobs: jobs}}
		m, err := sim.New(cfg)
		require.NoError(t, err)
		r, err := m.Run(context.Background())
		if err == nil {
			assert.Equal(t, 1, r.Summary.NoMatch, "the H100 job")
			assert.Equal(t, 1, r.Summary.Completed)
			assert.Equal(t, 1, r.Summary.Rejected)
		}
		return cfg, err
	}
	h100 := workload.Job{ID: "h", Client: "ada", GPUs: 1, Model: "H100", Duration: time.Minute, Utilization: 1}
	big := workload.Job{ID: "b", Client: "ada", GPUs: 8, Duration: time.Minute, Utilization: 1}
	fits := workload.Job{ID: "f", Client: "ada", Arrival: time.Second, GPUs: 2, Duration: time.Minute, Utilization: 1}

	_, err := run(h100, fits)
	require.NoError(t, err)

	_, err = run(h100, big)
	var nm *sim.NoMatchError
	require.ErrorAs(t, err, &nm)
	assert.Equal(t, 2, nm.Jobs)
	assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err))
	assert.ErrorContains(t, err, "no server fits any of the 2 jobs")
	t.Log(err)
}
