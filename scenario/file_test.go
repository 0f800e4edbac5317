package scenario_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
)

// valid is a small scenario; the tests below break one line of it.
const valid = `name: t
policies:
  posted:
    p: [["0", "0.001"]]
  surge: {kind: utilisation, p: [["0", "0.001"]], k: "2"}
servers:
  - {id: s, model: H100, gpus: 8, replicas: 2, policy: posted}
  - id: t
    gpus: 4
    policy: {p: [["0", "0.002"]], preempt: true}
clients:
  - {id: ada, budget: "100", value: "0.004", strategy: fixed}
  - {id: bea, budget: "50", value: "0.002", strategy: {kind: cheapest, start: "0.5"}, patience: 1h, allowance: {a: "1", b: "0.1"}}
workload:
  jobs: 10
  generator:
    arrivals: {process: poisson, rate: 0.1}
    durations: {dist: exponential, mean: 10m}
    clients: {ada: 1, bea: 1}
`

func TestParse(t *testing.T) {
	f, err := scenario.Parse([]byte(valid), "t.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"posted", "surge"}, f.PolicyNames())

	servers, clients, def, err := f.Market("")
	require.NoError(t, err)
	require.Len(t, servers, 3, "two replicas of s and t")
	assert.Equal(t, []string{"s-1", "s-2", "t"}, []string{servers[0].ID, servers[1].ID, servers[2].ID})
	assert.Equal(t, "reserve", fmt.Sprint(servers[0].Policy))
	assert.Len(t, clients, 2)
	assert.Nil(t, def)
	assert.Equal(t, "cheapest", scenario.StrategyName(clients[1].Strategy))
	require.NotNil(t, clients[1].Allowance)
	assert.Equal(t, "1", clients[1].Allowance.A.String())
	assert.Nil(t, clients[0].Allowance)

	servers, _, _, err = f.Market("surge")
	require.NoError(t, err)
	for _, s := range servers {
		assert.Equal(t, "utilisation", fmt.Sprint(s.Policy), "every server gets the policy compared")
	}
	_, _, _, err = f.Market("nope")
	assert.ErrorContains(t, err, `no policy "nope"`)
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string // in the message, after file:line:
	}{
		{"UnknownKey", "  jobs: 10", "  jobz: 10", `15: workload.jobz: no such field (want one of generator, horizon, jobs, trace)`},
		{"UnknownKeyDeep", "    arrivals: {process: poisson, rate: 0.1}", "    arrivals: {process: poisson, rat: 0.1}", `17: workload.generator.arrivals.rat: no such field`},
		{"UnknownPolicyKey", `    p: [["0", "0.001"]]`, `    price: [["0", "0.001"]]`, `4: policies.posted.price: no such field`},
		{"UnknownPolicyName", "replicas: 2, policy: posted}", "replicas: 2, policy: postd}", `7: servers[0].policy: no policy "postd"`},
		{"BadPolicy", `k: "2"}`, `k: "-2"}`, `5: policies.surge.k: "-2" is out of bounds: want 0 to 1000`},
		{"BadPolicyKind", `surge: {kind: utilisation`, `surge: {kind: surging`, `5: policies.surge: policy "surging": want reserve, utilisation or learning`},
		{"BadStrategy", "strategy: fixed}", "strategy: greedy}", `12: clients[0].strategy: no strategy "greedy"`},
		{"StrategyKey", `start: "0.5"}`, `begin: "0.5"}`, `13: clients[1].strategy.begin: no such field (want one of base, kind, slack, start, step, window)`},
		{"NoValue", `value: "0.004"`, `value: "0"`, `12: clients[0].value: a client needs a positive value`},
		{"SameClient", "{id: bea,", "{id: ada,", `13: clients[1].id: "ada" is another client's id`},
		{"InlinePolicyKey", "preempt: true}", "preemptt: true}", `10: servers[1].policy.preemptt: no such field`},
		{"NegativeAllowance", `allowance: {a: "1", b: "0.1"}`, `allowance: {a: "-1", b: "0.1"}`, `13: clients[1].allowance: a, b and period must not be negative`},
		{"AllowanceKey", `allowance: {a: "1", b: "0.1"}`, `allowance: {a: "1", c: "0.1"}`, `13: clients[1].allowance.c: no such field`},
		{"NoGPUs", "    gpus: 4", "    gpus: 0", `9: servers[1].gpus: a server needs at least one GPU`},
		{"WorkloadField", "rate: 0.1}", "rate: -1}", `17: workload.generator.arrivals.rate`},
		{"BadDuration", "mean: 10m}", "mean: ten}", `18: workload.generator.durations.mean: "ten" is not a duration, like 90s, 20m or 1h30m`},
		// Bounds (docs/sim.md): past them a run spins, runs out of
		// memory, or means nothing.
		{"ReadingEvery", "name: t", "name: t\nreading_every: 1ns", `2: reading_every: 1ns is out of bounds: want 1s to 24h0m0s, or 0 for a minute`},
		{"RouteTo", "name: t", "name: t\nroute_to: -1", `2: route_to: -1 is out of bounds: want 1 to 100000, or 0 for 8`},
		{"Sample", "name: t", "name: t\nsample: 1ns", `2: sample: 1ns is out of bounds: want 1s to`},
		{"Samples", "name: t", "name: t\nsample: 1s", `2: sample: 1s makes 31536000 samples in a run of 8760h0m0s: at most 1000000`},
		{"Replicas", "replicas: 2, policy: posted}", "replicas: 1000000000, policy: posted}", `7: servers[0].replicas: 1000000000 is out of bounds: want 1 to 100000, or 0 for one`},
		{"GPUs", "    gpus: 4", "    gpus: 1000000000", `9: servers[1].gpus: 1000000000 is out of bounds: want 1 to 1024`},
		{"AllServers", "replicas: 2, policy: posted}", "replicas: 100000, policy: posted}", `8: servers[1].replicas: the servers add up to 100001 with these`},
		{"AllGPUs", "gpus: 8, replicas: 2", "gpus: 1024, replicas: 1000", `7: servers[0].gpus: the GPUs add up to 1024000 with these: want 1 to 1000000`},
		{"Memory", "model: H100, gpus: 8", "model: H100, memory_mib: -1, gpus: 8", `7: servers[0].memory_mib: -1 is out of bounds`},
		{"BudgetNaN", `budget: "100"`, `budget: "NaN"`, `12: clients[0].budget: "NaN" is not a decimal number, like "0.0010" or "40000"`},
		{"BudgetHuge", `budget: "100"`, `budget: "1e13"`, `12: clients[0].budget: "10000000000000" is out of bounds: want 0 to 1000000000000`},
		{"ValueHuge", `value: "0.004"`, `value: "2000000"`, `12: clients[0].value: "2000000" is out of bounds: want more than 0, at most 1000000`},
		{"SeedNegative", "name: t", "name: t\nseeds: [1, -1]", `2: seeds[1]: "-1" is not a whole number, 0 or more`},
		{"SeedType", "name: t", "name: t\nseeds: one", `2: seeds: "one" is not a list`},
		{"Slack", "strategy: fixed}", "strategy: {kind: fixed, slack: .nan}}", `12: clients[0].strategy.slack: NaN is out of bounds: want more than 1, at most 100, or 0 for 1.5`},
		{"Start", `start: "0.5"}`, `start: "2"}`, `13: clients[1].strategy.start: "2" is out of bounds: want more than 0, at most 1, or 0 for 0.5`},
		{"Patience", "patience: 1h", "patience: 9000h", `13: clients[1].patience: 9000h0m0s is out of bounds`},
		{"AllowancePeriod", `allowance: {a: "1", b: "0.1"}`, `allowance: {a: "1", b: "0.1", period: 1ns}`, `13: clients[1].allowance.period: 1ns is out of bounds: want 1m0s to`},
		{"PolicyTime", "preempt: true}", "preempt: true, counter_ttl: -1s}", `10: servers[1].policy.counter_ttl: -1s is out of bounds`},
		{"MaxRunning", "preempt: true}", "preempt: true, fair_use: {max_running: -1}}", `10: servers[1].policy.fair_use.max_running: -1 is out of bounds`},
		{"JobGPUs", "    clients: {ada: 1, bea: 1}", "    gpus: {1000000000: 1}\n    clients: {ada: 1, bea: 1}", `19: workload.generator.gpus.1000000000: a job needs 1 to 1024 GPUs`},
		{"Rate", "rate: 0.1}", "rate: 1e12}", `17: workload.generator.arrivals.rate: must be a number more than 0, at most 1e+06`},
		{"Limit", "name: t", "name: t\nlimit: 100000h", `2: limit: 100000h0m0s is out of bounds: want 1s to 87600h0m0s`},
		{"NoName", "name: t", "name: \"\"", `1: name: a scenario needs a name`},
		{"NameNotAFileName", "name: t", "name: ../etc", `1: name: "../etc": want letters, digits`},
		{"PolicyNameNotAFileName", "  surge: {kind", "  su/rge: {kind", `2: policies: "su/rge": want letters`},
		{"DuplicateKey", "  jobs: 10", "  jobs: 10\n  jobs: 20", `already defined`},
		{"SecondDocument", "    clients: {ada: 1, bea: 1}", "    clients: {ada: 1, bea: 1}\n---\nname: u", `20: one scenario per file`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, 1, strings.Count(valid, tt.old), "the test breaks one line: %q", tt.old)
			_, err := scenario.Parse([]byte(strings.Replace(valid, tt.old, tt.new, 1)), "t.yaml")
			require.Error(t, err)
			var le *scenario.LineError
			require.True(t, errors.As(err, &le), "%T %v", err, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), "t.yaml:"), err.Error())
		})
	}
}

// TestExamples loads every scenario under examples/sim: they are what a
// new user runs first.
func TestExamples(t *testing.T) {
	paths, err := filepath.Glob("../examples/sim/*.yaml")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(paths), 2)
	for _, p := range paths {
		f, err := scenario.Load(p)
		require.NoError(t, err, p)
		for _, pol := range append([]string{""}, f.PolicyNames()...) {
			_, _, _, err := f.Market(pol)
			assert.NoError(t, err, "%s under %q", p, pol)
		}
	}
}

// TestBoundsDocumented: docs/sim.md lists every bound the scenario checks,
// as the checks word it.
func TestBoundsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/sim.md")
	require.NoError(t, err)
	for _, line := range scenario.BoundLines() {
		assert.True(t, strings.Contains(string(doc), "\n"+line+"\n"), "docs/sim.md, Bounds, lacks the line\n%s", line)
	}
}
