package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/sim/audit"
	"github.com/bourse/bourse/sim/metrics"
	"github.com/bourse/bourse/sim/workload"
)

// The acceptance run's scenario and trace (make sim-trace): a trace in the
// format of Alibaba's GPU pod list, three policies, one of them
// preempting.
const (
	traceScenario = "../../examples/sim/openb-sample.yaml"
	traceFile     = "../../examples/sim/traces/openb-pod-sample.csv"
	traceValue    = 0.0040 // the default client's value per GPU-second
	traceGPUs     = 48     // the scenario's servers' GPUs
)

// TestSimTraceAcceptance is the acceptance run of a trace: bourse sim
// compare replays the sample pod list under every policy with contract
// logs, and everything a researcher would check is checked from the
// files alone, against the docs' definitions and an independent count of
// the trace:
//
//   - what became of the trace's rows, counted again from the CSV;
//   - every settled charge priced again from the log by bourse sim audit
//     (docs/pricing.md's formula on exact rationals), the log's charges
//     summing to the revenue;
//   - welfare and surplus from the log: value × GPU-seconds used of
//     every settled contract, preempted ones included, less payments;
//   - utilisation from the log: GPUs × the time each contract ran, over
//     the GPUs × the run's length.
func TestSimTraceAcceptance(t *testing.T) {
	dir := t.TempDir()
	out, errOut, code := simCmd("compare", traceScenario, "--contract-log", "-o", dir)
	require.Equal(t, 0, code, errOut)
	t.Log("\n" + out)

	var results []metrics.Result
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &results))
	require.Len(t, results, 3)

	rows := countTraceRows(t, traceFile)
	preempted := 0
	for _, r := range results {
		t.Run(r.Policy, func(t *testing.T) {
			require.NotNil(t, r.Trace)
			assert.Equal(t, rows, *r.Trace, "the trace's rows, as counted from the CSV")
			assert.Equal(t, rows.Jobs, r.Summary.Jobs, "every job of the trace arrived")

			log := filepath.Join(dir, fmt.Sprintf("contracts-%s-%d.jsonl", r.Policy, r.Seed))
			aout, aerr, code := simCmd("audit", log)
			require.Equal(t, 0, code, "%s%s", aout, aerr)
			assert.Contains(t, aout, "adds up")

			f, err := os.Open(log)
			require.NoError(t, err)
			defer f.Close()
			rep, err := audit.Check(f)
			require.NoError(t, err)
			require.True(t, rep.OK())
			assert.Equal(t, r.Summary.Contracts, rep.Accepted)
			assert.Equal(t, rep.Accepted, rep.Settled+rep.Voided, "every contract ended")
			assert.Equal(t, dectest.D(rep.Charged).Round(2).String(), decimal.NewFromFloat(r.Summary.Revenue).Round(2).String(), "revenue is the log's charges")

			_, err = f.Seek(0, io.SeekStart)
			require.NoError(t, err)
			l := readLog(t, f)
			preempted += l.preempted
			assert.Equal(t, r.Summary.Preempted, l.preempted)
			assert.InEpsilon(t, l.valueUsed, r.Summary.Welfare, 1e-9, "welfare: value × GPU-seconds of every settled contract")
			assert.InDelta(t, l.valueUsed-l.charged, r.Summary.Surplus, 1e-6, "surplus: welfare less what was paid")
			assert.GreaterOrEqual(t, r.Summary.Length, l.lastEnd, "the run lasts at least to the last settlement")
			assert.InEpsilon(t, l.gpuSeconds/(traceGPUs*r.Summary.Length), r.Summary.Utilization, 1e-9, "utilisation over the run's length")
		})
	}
	assert.Positive(t, preempted, "the preempting policy preempted: surplus and welfare were checked with preemption")

	// A charge one cent off is caught, and the audit's exit status says so.
	log := filepath.Join(dir, "contracts-posted-1.jsonl")
	data, err = os.ReadFile(log)
	require.NoError(t, err)
	cut := bytes.Index(data, []byte(`"charge":"`)) + len(`"charge":"`)
	require.Greater(t, cut, len(`"charge":"`))
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, append(append(append([]byte{}, data[:cut]...), '9'), data[cut:]...), 0o644))
	aout, _, code := simCmd("audit", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, aout, "mismatches")
	assert.Regexp(t, `line \d+: contract c-\w+: charge is 9`, aout)
}

// TestSimTraceSample: the sample pod list is what its program makes, so
// that it can be made again and read.
func TestSimTraceSample(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a program")
	}
	made, err := exec.Command("go", "run", "../../examples/sim/traces/openb-pod-sample.go").Output()
	require.NoError(t, err)
	committed, err := os.ReadFile(traceFile)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(made, committed), "%s is not what openb-pod-sample.go makes", traceFile)
}

// countTraceRows classifies the pod list's rows as docs/sim.md says,
// independently of the trace reader.
func countTraceRows(t *testing.T, path string) workload.Rows {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	why := map[string]int{}
	rows := workload.Rows{Read: len(recs) - 1, Skipped: []workload.RowCount{}}
	for _, rec := range recs[1:] {
		switch {
		case rec[col["num_gpu"]] == "0":
			why[workload.DropNoGPUs]++
		case rec[col["scheduled_time"]] == "":
			why[workload.DropNeverScheduled]++
		case rec[col["scheduled_time"]] == rec[col["deletion_time"]]:
			why[workload.DropNoTime]++
		default:
			rows.Jobs++
		}
	}
	// Most first, as the results list them.
	for _, k := range []string{workload.DropNoGPUs, workload.DropNeverScheduled, workload.DropNoTime} {
		if why[k] > 0 {
			rows.Dropped = append(rows.Dropped, workload.RowCount{Reason: k, Rows: why[k]})
		}
	}
	require.Len(t, rows.Dropped, 3, "the sample has rows of every kind a reader drops")
	require.Greater(t, rows.Dropped[0].Rows, rows.Dropped[1].Rows)
	require.Greater(t, rows.Dropped[1].Rows, rows.Dropped[2].Rows)
	return rows
}

// logFigures are what the acceptance run recomputes from a contract log.
type logFigures struct {
	valueUsed  float64 // Σ value × U over settled contracts
	charged    float64
	gpuSeconds float64 // Σ gpus × (end − start) over contracts that started
	lastEnd    float64 // seconds from the opening to the last settlement
	preempted  int
}

func readLog(t *testing.T, r io.Reader) logFigures {
	opening := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var l logFigures
	started := map[string]time.Time{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var line struct {
			At       time.Time `json:"at"`
			Type     string    `json:"type"`
			Contract string    `json:"contract"`
			GPUs     int       `json:"gpus"`
			Reason   string    `json:"reason"`
			U        string    `json:"u"`
			Charge   string    `json:"charge"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		switch line.Type {
		case "started":
			started[line.Contract] = line.At
		case "settled":
			l.valueUsed += traceValue * dectest.D(line.U).InexactFloat64()
			l.charged += dectest.D(line.Charge).InexactFloat64()
			if s, ok := started[line.Contract]; ok {
				l.gpuSeconds += float64(line.GPUs) * line.At.Sub(s).Seconds()
			}
			l.lastEnd = max(l.lastEnd, line.At.Sub(opening).Seconds())
			if line.Reason == "preempted" {
				l.preempted++
			}
		}
	}
	require.NoError(t, sc.Err())
	return l
}
