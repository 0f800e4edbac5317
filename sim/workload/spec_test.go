package workload

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const specYAML = `
workload:
  jobs: 100000          # at most
  horizon: 24h
  generator:
    arrivals: {process: poisson, rate: 2.5}     # per second
    durations: {dist: lognormal, median: 10m, sigma: 1.2, max: 24h}
    gpus: {1: 0.6, 2: 0.2, 4: 0.15, 8: 0.05}
    models: {H100: 0.5, "": 0.5}
    utilization: {lo: 0.5, hi: 1.0}
    deadlines: {p: 0.3, slack: [1.5, 4]}
    preemptible: 0.2
    clients: {ada: 1, bea: 2}
`

func TestSpecYAML(t *testing.T) {
	var doc struct {
		Workload Spec `yaml:"workload"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(specYAML), &doc))
	g := testSpec()
	want := Spec{Jobs: 100000, Horizon: 24 * time.Hour, Generator: &g}
	assert.Equal(t, want, doc.Workload)
	require.NoError(t, doc.Workload.Validate())

	out, err := yaml.Marshal(want)
	require.NoError(t, err)
	var back Spec
	require.NoError(t, yaml.Unmarshal(out, &back))
	assert.Equal(t, want, back, "%s", out)

	js, err := json.Marshal(want)
	require.NoError(t, err)
	back = Spec{}
	require.NoError(t, json.Unmarshal(js, &back))
	assert.Equal(t, want, back, "%s", js)

	var tr Spec
	require.NoError(t, yaml.Unmarshal([]byte("trace: {format: helios, file: x.csv, skip_bad_rows: true, utilization: 0.9, time_scale: 0.5}"), &tr))
	assert.Equal(t, Spec{Trace: &TraceSpec{Format: Helios, File: "x.csv", SkipBadRows: true, Utilization: 0.9, TimeScale: 0.5}}, tr)
}

func TestSpecValidate(t *testing.T) {
	gen := func(edit func(*GeneratorSpec)) Spec {
		g := testSpec()
		edit(&g)
		return Spec{Jobs: 10, Generator: &g}
	}
	trace := func(edit func(*TraceSpec)) Spec {
		tr := TraceSpec{Format: Alibaba, File: "x.csv"}
		edit(&tr)
		return Spec{Trace: &tr}
	}
	for _, tc := range []struct {
		path string
		spec Spec
	}{
		{"generator", Spec{}},
		{"jobs", Spec{Jobs: -1, Trace: &TraceSpec{Format: Alibaba, File: "x"}}},
		{"horizon", Spec{Horizon: -1, Trace: &TraceSpec{Format: Alibaba, File: "x"}}},
		{"trace", Spec{Jobs: 1, Generator: &GeneratorSpec{}, Trace: &TraceSpec{}}},
		{"jobs", Spec{Generator: &GeneratorSpec{}}},
		{"generator.arrivals.process", gen(func(g *GeneratorSpec) { g.Arrivals.Process = "uniform" })},
		{"generator.arrivals.rate", gen(func(g *GeneratorSpec) { g.Arrivals.Rate = 0 })},
		{"generator.arrivals.rate", gen(func(g *GeneratorSpec) { g.Arrivals.Rate = math.Inf(1) })},
		{"generator.arrivals.rate_on", gen(func(g *GeneratorSpec) { g.Arrivals = ArrivalSpec{Process: "bursty"} })},
		{"generator.arrivals.rate_off", gen(func(g *GeneratorSpec) { g.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 1, RateOff: -1} })},
		{"generator.arrivals.mean_on", gen(func(g *GeneratorSpec) { g.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 1} })},
		{"generator.arrivals.mean_off", gen(func(g *GeneratorSpec) {
			g.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 1, MeanOn: time.Second}
		})},
		{"generator.durations.dist", gen(func(g *GeneratorSpec) { g.Durations.Dist = "" })},
		{"generator.durations.median", gen(func(g *GeneratorSpec) { g.Durations.Median = 0 })},
		{"generator.durations.sigma", gen(func(g *GeneratorSpec) { g.Durations.Sigma = math.NaN() })},
		{"generator.durations.alpha", gen(func(g *GeneratorSpec) { g.Durations = DurationSpec{Dist: "pareto", Min: 1} })},
		{"generator.durations.min", gen(func(g *GeneratorSpec) { g.Durations = DurationSpec{Dist: "pareto", Alpha: 1} })},
		{"generator.durations.mean", gen(func(g *GeneratorSpec) { g.Durations = DurationSpec{Dist: "exponential"} })},
		{"generator.durations.value", gen(func(g *GeneratorSpec) { g.Durations = DurationSpec{Dist: "fixed"} })},
		{"generator.durations.max", gen(func(g *GeneratorSpec) { g.Durations.Max = time.Millisecond })},
		{"generator.durations.min", gen(func(g *GeneratorSpec) { g.Durations.Min = -1 })},
		{"generator.gpus.0", gen(func(g *GeneratorSpec) { g.GPUs = map[int]float64{0: 1} })},
		{"generator.gpus.2", gen(func(g *GeneratorSpec) { g.GPUs = map[int]float64{1: 1, 2: -1} })},
		{"generator.gpus", gen(func(g *GeneratorSpec) { g.GPUs = map[int]float64{1: 0} })},
		{`generator.models.""`, gen(func(g *GeneratorSpec) { g.Models = map[string]float64{"": math.NaN()} })},
		{"generator.utilization", gen(func(g *GeneratorSpec) { g.Utilization = Range{0, 1} })},
		{"generator.utilization", gen(func(g *GeneratorSpec) { g.Utilization = Range{0.9, 0.5} })},
		{"generator.deadlines.p", gen(func(g *GeneratorSpec) { g.Deadlines.P = 1.1 })},
		{"generator.deadlines.slack", gen(func(g *GeneratorSpec) { g.Deadlines.Slack = [2]float64{0.5, 2} })},
		{"generator.deadlines.slack", gen(func(g *GeneratorSpec) { g.Deadlines.Slack = [2]float64{} })},
		{"generator.preemptible", gen(func(g *GeneratorSpec) { g.Preemptible = -0.1 })},
		{"generator.clients", gen(func(g *GeneratorSpec) { g.Clients = nil })},
		{"generator.clients.bea", gen(func(g *GeneratorSpec) { g.Clients["bea"] = math.Inf(1) })},
		{"trace.format", trace(func(tr *TraceSpec) { tr.Format = "parquet" })},
		{"trace.format", trace(func(tr *TraceSpec) { tr.Format = "" })},
		{"trace.file", trace(func(tr *TraceSpec) { tr.File = "" })},
		{"trace.utilization", trace(func(tr *TraceSpec) { tr.Utilization = 2 })},
		{"trace.time_scale", trace(func(tr *TraceSpec) { tr.TimeScale = -1 })},
		{"trace.clients", trace(func(tr *TraceSpec) { tr.Clients = -1 })},
		{"trace.clients", trace(func(tr *TraceSpec) { tr.Format, tr.Clients = Helios, 3 })},
	} {
		t.Run(tc.path, func(t *testing.T) {
			err := tc.spec.Validate()
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.path, fe.Path)
			t.Log(err)
		})
	}
	assert.NoError(t, gen(func(g *GeneratorSpec) {
		*g = GeneratorSpec{Arrivals: g.Arrivals, Durations: g.Durations, Clients: g.Clients}
	}).Validate(), "the rest is optional")
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	t.Run("Generator", func(t *testing.T) {
		g := testSpec()
		src, c, err := Open(Spec{Jobs: 50, Generator: &g}, dir, 4)
		require.NoError(t, err)
		defer c.Close()
		assert.Equal(t, generate(t, g, 4, 50), take(t, src, 0))
	})
	t.Run("Trace", func(t *testing.T) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.csv"), []byte(alibabaRowsOK), 0o644))
		src, c, err := Open(Spec{Jobs: 3, Trace: &TraceSpec{Format: Alibaba, File: "a.csv", TimeScale: 0.5, Utilization: 0.9}}, dir, 0)
		require.NoError(t, err)
		jobs := take(t, src, 0)
		require.Len(t, jobs, 3)
		assert.Equal(t, (9437497-100)*time.Second/2, jobs[2].Arrival)
		assert.Equal(t, (10769854-9437497)*time.Second/2, jobs[2].Duration)
		assert.Equal(t, jobs[2].Duration, jobs[2].Reference)
		assert.Equal(t, 0.9, jobs[2].Utilization)
		counts := src.(interface {
			Skipped() int
			Dropped() int
		})
		assert.Equal(t, 1, counts.Dropped())
		require.NoError(t, c.Close())
	})
	t.Run("Gzip", func(t *testing.T) {
		f, err := os.Create(filepath.Join(dir, "h.csv.gz"))
		require.NoError(t, err)
		gz := gzip.NewWriter(f)
		_, err = io.WriteString(gz, heliosRowsOK+"9,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,,,x,0\n")
		require.NoError(t, err)
		require.NoError(t, gz.Close())
		require.NoError(t, f.Close())
		src, c, err := Open(Spec{Trace: &TraceSpec{Format: Helios, File: filepath.Join(dir, "h.csv.gz")}}, "elsewhere", 0)
		require.NoError(t, err)
		defer c.Close()
		_, err = src.Next()
		require.NoError(t, err)
		_, _ = src.Next()
		_, err = src.Next()
		var le *LineError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 6, le.Line)
		assert.Contains(t, err.Error(), "h.csv.gz: line 6, column duration")
	})
	t.Run("Errors", func(t *testing.T) {
		_, _, err := Open(Spec{Trace: &TraceSpec{Format: Alibaba, File: "missing.csv"}}, dir, 0)
		assert.ErrorIs(t, err, os.ErrNotExist)
		_, _, err = Open(Spec{}, dir, 0)
		var fe *FieldError
		assert.True(t, errors.As(err, &fe))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.csv"), nil, 0o644))
		_, _, err = Open(Spec{Trace: &TraceSpec{Format: Alibaba, File: "empty.csv"}}, dir, 0)
		assert.ErrorContains(t, err, "empty.csv: line 1: empty file")
	})
}
