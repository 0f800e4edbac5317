package workload

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

//go:generate go test -run ^TestSamples$ -update .

// samples are the small traces under examples/sim/traces: made by the
// generator from a fixed spec and seed, so that they can be made again
// and a test can tell when they no longer match.
var samples = []struct {
	file   string
	format Format
	spec   Spec
	seed   uint64
}{
	{"alibaba-sample.csv", Alibaba, Spec{Jobs: 400, Generator: &GeneratorSpec{
		// Bursts of submissions, mostly single GPUs, often shared.
		Arrivals:    ArrivalSpec{Process: "bursty", RateOn: 1.0 / 20, RateOff: 1.0 / 300, MeanOn: 30 * time.Minute, MeanOff: time.Hour},
		Durations:   DurationSpec{Dist: "lognormal", Median: 20 * time.Minute, Sigma: 1.5, Max: 24 * time.Hour},
		GPUs:        map[int]float64{1: 0.8, 2: 0.08, 4: 0.06, 8: 0.06},
		Models:      map[string]float64{"": 0.67, "T4": 0.1, "V100M32": 0.1, "P100": 0.05, "G2": 0.08},
		Utilization: Range{0.1, 1},
		Preemptible: 0.4,
		Clients:     map[string]float64{"openb": 1},
	}}, 2023},
	{"helios-sample.csv", Helios, Spec{Jobs: 400, Generator: &GeneratorSpec{
		// Steady submissions from a few heavy users and many light ones,
		// run times with a long tail.
		Arrivals:  ArrivalSpec{Process: "poisson", Rate: 1.0 / 45},
		Durations: DurationSpec{Dist: "pareto", Min: 2 * time.Minute, Alpha: 0.7, Max: 3 * 24 * time.Hour},
		GPUs:      map[int]float64{1: 0.55, 2: 0.1, 4: 0.1, 8: 0.2, 16: 0.05},
		Clients: map[string]float64{
			"uXBbc": 12, "uVMrF": 6, "uzqls": 4, "u7eHc": 3, "uQ2nW": 2.4,
			"uJk8d": 2, "uTr4s": 1.7, "uP0oA": 1.5, "uM3vX": 1.3, "ub9Lf": 1.2,
		},
	}}, 2021},
}

// Samples writes the sample traces into dir (examples/sim/traces in the
// repository): alibaba-sample.csv and helios-sample.csv.
func Samples(dir string) error {
	for _, s := range samples {
		src, _, err := Open(s.spec, dir, s.seed)
		if err != nil {
			return fmt.Errorf("workload: sample %s: %w", s.file, err)
		}
		f, err := os.Create(filepath.Join(dir, s.file))
		if err != nil {
			return fmt.Errorf("workload: sample: %w", err)
		}
		if _, err := Write(f, s.format, src); err != nil {
			f.Close()
			return fmt.Errorf("workload: sample %s: %w", s.file, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("workload: sample %s: %w", s.file, err)
		}
	}
	return nil
}
