package workload

import (
	"errors"
	"time"
)

// Spec is a workload as a scenario file writes it: a generator or a
// trace, and when to stop. In YAML:
//
//	workload:
//	  jobs: 100000          # at most
//	  horizon: 24h          # no arrivals from then on
//	  generator:
//	    arrivals: {process: poisson, rate: 2.5}   # jobs a second
//	    durations: {dist: lognormal, median: 10m, sigma: 1.2, max: 24h}
//	    gpus: {1: 0.6, 2: 0.2, 4: 0.15, 8: 0.05}
//	    models: {H100: 0.5, "": 0.5}
//	    utilization: {lo: 0.5, hi: 1.0}
//	    deadlines: {p: 0.3, slack: [1.5, 4]}
//	    preemptible: 0.2
//	    clients: {ada: 1, bea: 2}
//
// or, instead of the generator,
//
//	trace: {format: alibaba, file: traces/alibaba-sample.csv}
//
// Durations are Go duration strings ("10m", "1h30m") in YAML; encoding/json
// writes them as nanoseconds.
type Spec struct {
	// Jobs is how many jobs at most; 0 is no limit.
	Jobs int `yaml:"jobs,omitempty" json:"jobs,omitempty"`
	// Horizon stops the workload before the first job that arrives at or
	// after it; 0 is no limit. A generator needs Jobs or Horizon.
	Horizon   time.Duration  `yaml:"horizon,omitempty" json:"horizon,omitempty"`
	Generator *GeneratorSpec `yaml:"generator,omitempty" json:"generator,omitempty"`
	Trace     *TraceSpec     `yaml:"trace,omitempty" json:"trace,omitempty"`
}

// TraceSpec is a workload read from a trace file.
type TraceSpec struct {
	Format Format `yaml:"format" json:"format"`
	// File is the trace, relative to the scenario's folder unless
	// absolute; a name ending in .gz is read through gzip.
	File string `yaml:"file" json:"file"`
	// SkipBadRows counts rows that cannot be read instead of failing.
	SkipBadRows bool `yaml:"skip_bad_rows,omitempty" json:"skip_bad_rows,omitempty"`
	// Utilization is the busy fraction of jobs whose trace gives none; 1
	// if zero.
	Utilization float64 `yaml:"utilization,omitempty" json:"utilization,omitempty"`
	// TimeScale multiplies every time of the trace (arrivals, run times,
	// deadlines): 0.5 replays it twice as fast, in half the simulated
	// time. 1 if zero. Jobs and Horizon count after scaling.
	TimeScale float64 `yaml:"time_scale,omitempty" json:"time_scale,omitempty"`
	// Clients, for Alibaba, which has no users, spreads pods over this
	// many clients by a hash of their name; 0 makes each QoS class a
	// client.
	Clients int `yaml:"clients,omitempty" json:"clients,omitempty"`
}

// The bounds of a workload's numbers beyond those their meaning sets
// (docs/sim.md, "Bounds"): past them a run means nothing or cannot end.
const (
	MaxJobs      = 1_000_000_000
	MaxTime      = 10 * 365 * 24 * time.Hour // horizons, durations, spells
	MaxRate      = 1e6                       // jobs a second
	MaxJobGPUs   = 1024                      // a job's GPUs: no server has more
	MaxTimeScale = 1e6
	MaxClients   = 1_000_000
	MaxSlack     = 1000 // a deadline's slack
	MaxShape     = 1000 // a lognormal's sigma, a Pareto's alpha
)

// Validate says what is wrong with the spec, as a *FieldError whose path
// starts below the workload (e.g. "generator.arrivals.rate").
func (s Spec) Validate() error {
	switch {
	case s.Jobs < 0:
		return fieldErr("jobs", "must not be negative, is %d", s.Jobs)
	case s.Jobs > MaxJobs:
		return fieldErr("jobs", "at most %d, is %d", MaxJobs, s.Jobs)
	case s.Horizon < 0:
		return fieldErr("horizon", "must not be negative, is %v", s.Horizon)
	case s.Horizon > MaxTime:
		return fieldErr("horizon", "at most %v, is %v", MaxTime, s.Horizon)
	case s.Generator != nil && s.Trace != nil:
		return fieldErr("trace", "a workload has a generator or a trace, not both")
	case s.Generator != nil:
		if s.Jobs == 0 && s.Horizon == 0 {
			return fieldErr("jobs", "a generator never stops by itself: give jobs, horizon or both")
		}
		return under("generator", s.Generator.Validate())
	case s.Trace != nil:
		return under("trace", s.Trace.Validate())
	}
	return &FieldError{Path: "generator", Err: errors.New("a workload needs a generator or a trace")}
}

// Validate says which field is wrong, by its path from the trace.
func (t TraceSpec) Validate() error {
	switch t.Format {
	case Alibaba, Helios, JSONL:
	case "":
		return fieldErr("format", "missing: alibaba, helios or jsonl")
	default:
		return fieldErr("format", "%q is none of alibaba, helios, jsonl", t.Format)
	}
	switch {
	case t.File == "":
		return fieldErr("file", "missing: the trace's path")
	case !(t.Utilization >= 0 && t.Utilization <= 1):
		return fieldErr("utilization", "must be in (0, 1], is %v", t.Utilization)
	case !(t.TimeScale >= 0 && t.TimeScale <= MaxTimeScale):
		return fieldErr("time_scale", "must be a number more than 0, at most %v, is %v", MaxTimeScale, t.TimeScale)
	case t.Clients < 0 || t.Clients > MaxClients:
		return fieldErr("clients", "must be 0 to %d, is %d", MaxClients, t.Clients)
	case t.Clients > 0 && t.Format != Alibaba:
		return fieldErr("clients", "only an alibaba trace, which has no users, spreads its jobs over clients")
	}
	return nil
}
