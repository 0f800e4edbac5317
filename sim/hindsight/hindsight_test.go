package hindsight_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/hindsight"
)

// TestBenchmark runs a small benchmark on examples/sim/known-demand.yaml
// and checks what it says against its runs: the grid is the learner's,
// each seed's best fixed price is the grid's run that earned most on
// that seed, the regret at each mark is the best of the grid's takings
// then less the learner's, and the report's files are written.
func TestBenchmark(t *testing.T) {
	f, err := scenario.Load("../../examples/sim/known-demand.yaml")
	require.NoError(t, err)
	plans, setup, err := hindsight.Plans(f, hindsight.Options{Levels: 3, Jobs: 400, Seeds: []uint64{1, 2}})
	require.NoError(t, err)
	require.Len(t, plans, 2*(1+2+3), "the learner, posted and surge, and three fixed prices, on two seeds")
	assert.Equal(t, []string{"fixed-x0.5", "fixed-x1.414214", "fixed-x4"}, setup.Grid)
	assert.Equal(t, []string{"posted", "surge"}, setup.Others, "the scenario's policies but its learner")
	assert.Equal(t, 1, setup.Servers)
	results, err := sim.RunAll(context.Background(), plans, 2, nil)
	require.NoError(t, err)
	r, err := hindsight.Analyse(results, setup)
	require.NoError(t, err)

	revenue := map[string]map[uint64]float64{}
	for _, x := range results {
		if revenue[x.Policy] == nil {
			revenue[x.Policy] = map[uint64]float64{}
		}
		revenue[x.Policy][x.Seed] = x.Summary.Revenue
		assert.Len(t, x.Track, 3, "a mark at 100, 200 and 300 arrivals")
	}
	for _, s := range r.PerSeed {
		best := hindsight.FixedLabel(s.Best)
		for _, label := range setup.Grid {
			assert.GreaterOrEqual(t, revenue[best][s.Seed], revenue[label][s.Seed], "seed %d: %s is the best fixed price, not %s", s.Seed, best, label)
		}
		assert.Equal(t, revenue[best][s.Seed], s.Revenue[hindsight.BestLabel])
		assert.Equal(t, revenue[hindsight.LearnerLabel][s.Seed], s.Revenue[hindsight.LearnerLabel])
	}
	wins := 0
	for _, seed := range setup.Seeds {
		if revenue[hindsight.LearnerLabel][seed] > revenue["posted"][seed] {
			wins++
		}
	}
	assert.Equal(t, wins, r.Beats["posted"])
	require.Len(t, r.Regret, 3)
	for i, p := range r.Regret {
		var best, learner float64
		for _, x := range results {
			if x.Policy == hindsight.LearnerLabel {
				learner += x.Track[i].Revenue / 2
			}
		}
		for _, seed := range setup.Seeds {
			top := 0.0
			for _, x := range results {
				if x.Seed == seed && slices.Contains(setup.Grid, x.Policy) {
					top = max(top, x.Track[i].Revenue)
				}
			}
			best += top / 2
		}
		assert.InDelta(t, best, p.Best, 1e-9, "mark %d", i)
		assert.InDelta(t, learner, p.Learner, 1e-9, "mark %d", i)
		assert.InDelta(t, best-learner, p.Regret, 1e-9)
		assert.Equal(t, (i+1)*100, p.Jobs)
	}
	assert.Len(t, r.Runs, 2*4, "best fixed, the learner, posted and surge, per seed")
	assert.Equal(t, hindsight.BestLabel, r.Runs[0].Policy)
	for _, l := range r.Levels {
		assert.False(t, l.Multiplier.IsZero())
	}
	assert.True(t, r.Levels[1].Multiplier.Equal(decimal.RequireFromString("1.414214")))

	var out bytes.Buffer
	require.NoError(t, hindsight.Table(&out, r))
	assert.Contains(t, out.String(), "learner / best fixed price of its seed: revenue ")
	assert.Contains(t, out.String(), "learner above posted on ")
	assert.Regexp(t, `(?m)^  seed 2 +×[0-9.]+ +[0-9.]+  learning +[0-9.]+%  posted +[0-9.]+%  surge +[0-9.]+%$`, out.String(), "the runs paired by seed")
	dir := t.TempDir()
	require.NoError(t, hindsight.Write(dir, r))
	for _, name := range []string{"index.html", "hindsight.json", "regret.csv", "regret.svg", "ratio.svg", "prices.svg", "prices.png", "summary.json"} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.NoError(t, err, name)
	}
}

// TestPlansOverrideClients: --strategy and --patience change every
// client of every run, and nothing of the scenario they came from.
func TestPlansOverrideClients(t *testing.T) {
	f, err := scenario.Load("../../examples/sim/known-demand.yaml")
	require.NoError(t, err)
	plans, _, err := hindsight.Plans(f, hindsight.Options{Levels: 2, Seeds: []uint64{1}, Strategy: "adaptive", Patience: 24 * time.Hour})
	require.NoError(t, err)
	for _, p := range plans {
		cfg, closer, err := p.Build()
		require.NoError(t, err)
		require.NoError(t, closer())
		require.Len(t, cfg.Clients, 8)
		for _, c := range cfg.Clients {
			assert.Equal(t, 24*time.Hour, c.Patience, "%s in %s", c.ID, p.Policy)
			assert.IsType(t, &strategy.Adaptive{}, c.Strategy, "%s in %s", c.ID, p.Policy)
		}
	}
	assert.Equal(t, 10*time.Minute, f.Clients[0].Patience, "the scenario is the file's still")
	assert.Equal(t, "cheapest", f.Clients[0].Strategy.Kind)
}
