package workload

import (
	"errors"
	"math"
	"math/rand/v2"
	"time"
)

// DurationSpec is the distribution of jobs' run times. Dist picks it:
//
//   - lognormal: Median and Sigma (of the log), the usual fit of DL jobs'
//     run times;
//   - pareto: Min (the scale) and Alpha (the tail; ≤ 1 has no mean);
//   - exponential: Mean;
//   - fixed: Value, every job the same.
//
// Every draw is clamped to [Min, Max] and rounded to the millisecond. Min
// is a second unless set (a job of no time is nothing to trade); the
// heavy-tailed lognormal and pareto are cut at a week unless Max is set,
// so that one draw in a million cannot hold a GPU for years.
type DurationSpec struct {
	Dist   string        `yaml:"dist" json:"dist"`
	Median time.Duration `yaml:"median,omitempty" json:"median,omitempty"`
	Sigma  float64       `yaml:"sigma,omitempty" json:"sigma,omitempty"`
	Alpha  float64       `yaml:"alpha,omitempty" json:"alpha,omitempty"`
	Mean   time.Duration `yaml:"mean,omitempty" json:"mean,omitempty"`
	Value  time.Duration `yaml:"value,omitempty" json:"value,omitempty"`
	Min    time.Duration `yaml:"min,omitempty" json:"min,omitempty"`
	Max    time.Duration `yaml:"max,omitempty" json:"max,omitempty"`
}

// The clamps a DurationSpec has when it sets none.
const (
	DefaultMinDuration = time.Second
	DefaultMaxHeavy    = 7 * 24 * time.Hour // lognormal and pareto
)

// Validate says which field is wrong, by its path from the spec.
func (d DurationSpec) Validate() error {
	positive := func(path string, v time.Duration) error {
		if v <= 0 || v > MaxTime {
			return fieldErr(path, "must be more than 0, at most %v, is %v", MaxTime, v)
		}
		return nil
	}
	var err error
	switch d.Dist {
	case "lognormal":
		err = positive("median", d.Median)
		if err == nil && !(d.Sigma > 0 && d.Sigma <= MaxShape) {
			err = fieldErr("sigma", "must be a number more than 0, at most %v, is %v", MaxShape, d.Sigma)
		}
	case "pareto":
		err = positive("min", d.Min)
		if err == nil && !(d.Alpha > 0 && d.Alpha <= MaxShape) {
			err = fieldErr("alpha", "must be a number more than 0, at most %v, is %v", MaxShape, d.Alpha)
		}
	case "exponential":
		err = positive("mean", d.Mean)
	case "fixed":
		err = positive("value", d.Value)
	case "":
		err = fieldErr("dist", "missing: lognormal, pareto, exponential or fixed")
	default:
		err = fieldErr("dist", "%q is none of lognormal, pareto, exponential, fixed", d.Dist)
	}
	if err != nil {
		return err
	}
	if d.Min < 0 || d.Min > MaxTime {
		return fieldErr("min", "must be 0 to %v, is %v", MaxTime, d.Min)
	}
	if d.Max < 0 || d.Max > MaxTime {
		return fieldErr("max", "must be 0 to %v, is %v", MaxTime, d.Max)
	}
	if lo, hi := d.clamp(); hi < lo {
		return fieldErr("max", "%v is below the minimum %v", hi, lo)
	}
	return nil
}

// clamp is the range draws are cut to, defaults filled in.
func (d DurationSpec) clamp() (lo, hi time.Duration) {
	lo, hi = d.Min, d.Max
	if lo == 0 {
		lo = DefaultMinDuration
		if d.Dist == "fixed" && d.Value < lo {
			lo = d.Value // a fixed value is what was asked for
		}
	}
	if hi == 0 {
		hi = math.MaxInt64
		if d.Dist == "lognormal" || d.Dist == "pareto" {
			hi = max(DefaultMaxHeavy, lo)
		}
	}
	return lo, hi
}

// durations draws run times from a DurationSpec.
type durations struct {
	spec   DurationSpec
	lo, hi float64 // the clamp, in nanoseconds
	scale  float64 // median, minimum or mean, in nanoseconds
}

func newDurations(d DurationSpec) (durations, error) {
	if err := d.Validate(); err != nil {
		return durations{}, err
	}
	lo, hi := d.clamp()
	ds := durations{spec: d, lo: float64(lo), hi: float64(hi)}
	switch d.Dist {
	case "lognormal":
		ds.scale = float64(d.Median)
	case "pareto":
		ds.scale = float64(d.Min)
	case "exponential":
		ds.scale = float64(d.Mean)
	case "fixed":
		ds.scale = float64(d.Value)
	default:
		return durations{}, errors.New("workload: unknown distribution " + d.Dist) // Validate let it through
	}
	return ds, nil
}

// draw is one run time.
func (ds durations) draw(rng *rand.Rand) time.Duration {
	var x float64
	switch ds.spec.Dist {
	case "lognormal":
		x = ds.scale * math.Exp(ds.spec.Sigma*rng.NormFloat64())
	case "pareto":
		// Inverse CDF; 1-U is in (0, 1], never dividing by zero.
		x = ds.scale * math.Pow(1-rng.Float64(), -1/ds.spec.Alpha)
	case "exponential":
		x = ds.scale * rng.ExpFloat64()
	default:
		x = ds.scale
	}
	x = min(max(x, ds.lo), ds.hi) // NaN cannot come: every scale is > 0
	return max(roundMilli(x), time.Millisecond)
}

// roundMilli rounds nanoseconds to the millisecond, and keeps within the
// range of a Duration whatever the clamp.
func roundMilli(ns float64) time.Duration {
	const ms = float64(time.Millisecond)
	if ns >= math.MaxInt64-ms {
		return time.Duration(math.MaxInt64 / int64(time.Millisecond) * int64(time.Millisecond))
	}
	return time.Duration(math.Round(ns/ms)) * time.Millisecond
}
