package scenario_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/scenario"
)

// TestParseMistakes: mistakes that once passed silently, or failed
// without naming their field, are caught when the file is read, as
// file:line: field: message.
func TestParseMistakes(t *testing.T) {
	tests := []struct {
		name, old, new string
		want           string // the whole message
	}{
		// Values of the wrong type name their field (scalar.go).
		{"DurationInWords", "mean: 10m}", "mean: 15 minutes}",
			`t.yaml:18: workload.generator.durations.mean: "15 minutes" is not a duration, like 90s, 20m or 1h30m`},
		{"DecimalWithComma", `budget: "100"`, `budget: "1,000"`,
			`t.yaml:12: clients[0].budget: "1,000" is not a decimal number, like "0.0010" or "40000"`},
		{"CountInWords", "    gpus: 4", "    gpus: four",
			`t.yaml:9: servers[1].gpus: "four" is not a whole number`},
		{"NegativeSeed", "name: t", "name: t\nseeds: [1, -2]",
			`t.yaml:2: seeds[1]: "-2" is not a whole number, 0 or more`},
		{"RateInWords", "rate: 0.1}", "rate: fast}",
			`t.yaml:17: workload.generator.arrivals.rate: "fast" is not a number`},
		{"BoolInWords", "preempt: true}", "preempt: yes please}",
			`t.yaml:10: servers[1].policy.preempt: "yes please" is not true or false`},
		{"WeightKey", "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bea: 1}\n    gpus: {one: 1}",
			`t.yaml:20: workload.generator.gpus.one: "one" is not a whole number`},
		{"ListForAMap", "clients: {ada: 1, bea: 1}", "clients: [ada, bea]",
			`t.yaml:19: workload.generator.clients: cannot unmarshal !!seq into map[string]float64`},
		// The workload against the market (feasible.go).
		{"MisspeltClient", "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bee: 1}",
			`t.yaml:19: workload.generator.clients.bee: no client "bee" in clients (there are: ada, bea), and no default_client to make one`},
		{"NoServerOfTheModel", "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bea: 1}\n    models: {A100: 1}",
			`t.yaml:20: workload.generator.models.A100: no server has A100 GPUs (the servers' models: (none), H100): its jobs could never run`},
		{"TooManyGPUsOfTheModel", "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bea: 1}\n    models: {H100: 1, \"\": 1}\n    gpus: {1: 1, 16: 1}",
			`t.yaml:21: workload.generator.gpus.16: jobs of 16 GPUs could never run: the largest server has 8`},
		{"EightH100sFit", "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bea: 1}\n    models: {H100: 1}\n    gpus: {1: 1, 8: 1}",
			``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, 1, strings.Count(valid, tt.old), "the test breaks one line: %q", tt.old)
			_, err := scenario.Parse([]byte(strings.Replace(valid, tt.old, tt.new, 1)), "t.yaml")
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			var le *scenario.LineError
			require.True(t, errors.As(err, &le), "%T %v", err, err)
			assert.Equal(t, tt.want, err.Error())
		})
	}
	t.Run("DefaultClientMakesAnyone", func(t *testing.T) {
		src := strings.Replace(valid, "clients: {ada: 1, bea: 1}", "clients: {ada: 1, zed: 1}", 1) +
			`default_client: {budget: "10", value: "0.001", strategy: fixed}` + "\n"
		_, err := scenario.Parse([]byte(src), "t.yaml")
		assert.NoError(t, err)
	})
	t.Run("ModelTooSmall", func(t *testing.T) {
		src := strings.Replace(valid, "clients: {ada: 1, bea: 1}", "clients: {ada: 1, bea: 1}\n    models: {H100: 1}\n    gpus: {16: 1}", 1)
		_, err := scenario.Parse([]byte(src), "t.yaml")
		assert.EqualError(t, err, "t.yaml:21: workload.generator.gpus.16: jobs of 16 H100 GPUs could never run: the largest H100 server has 8")
	})
}
