package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// ArrivalSpec is how jobs arrive. Process picks it:
//
//   - poisson: Rate jobs a second, each gap drawn apart from the others;
//   - bursty: a Markov-modulated Poisson process that spends exponential
//     spells of mean MeanOn arriving at RateOn and of mean MeanOff at
//     RateOff (0 for silence): the same mean load as a Poisson process,
//     in bursts that fill queues a Poisson process never does.
type ArrivalSpec struct {
	Process string        `yaml:"process" json:"process"`
	Rate    float64       `yaml:"rate,omitempty" json:"rate,omitempty"`
	RateOn  float64       `yaml:"rate_on,omitempty" json:"rate_on,omitempty"`
	RateOff float64       `yaml:"rate_off,omitempty" json:"rate_off,omitempty"`
	MeanOn  time.Duration `yaml:"mean_on,omitempty" json:"mean_on,omitempty"`
	MeanOff time.Duration `yaml:"mean_off,omitempty" json:"mean_off,omitempty"`
}

// MeanRate is the long-run arrivals per second.
func (a ArrivalSpec) MeanRate() float64 {
	if a.Process == "bursty" {
		on, off := a.MeanOn.Seconds(), a.MeanOff.Seconds()
		return (a.RateOn*on + a.RateOff*off) / (on + off)
	}
	return a.Rate
}

// Validate says which field is wrong, by its path from the spec.
func (a ArrivalSpec) Validate() error {
	rate := func(path string, v float64, zero bool) error {
		if math.IsNaN(v) || v > MaxRate || v < 0 || (v == 0 && !zero) {
			if zero {
				return fieldErr(path, "must be a number from 0 to %v (jobs a second), is %v", MaxRate, v)
			}
			return fieldErr(path, "must be a number more than 0, at most %v (jobs a second), is %v", MaxRate, v)
		}
		return nil
	}
	switch a.Process {
	case "poisson":
		return rate("rate", a.Rate, false)
	case "bursty":
		if err := rate("rate_on", a.RateOn, false); err != nil {
			return err
		}
		if err := rate("rate_off", a.RateOff, true); err != nil {
			return err
		}
		if a.MeanOn <= 0 || a.MeanOn > MaxTime {
			return fieldErr("mean_on", "must be more than 0, at most %v, is %v", MaxTime, a.MeanOn)
		}
		if a.MeanOff <= 0 || a.MeanOff > MaxTime {
			return fieldErr("mean_off", "must be more than 0, at most %v, is %v", MaxTime, a.MeanOff)
		}
		return nil
	case "":
		return fieldErr("process", "missing: poisson or bursty")
	}
	return fieldErr("process", "%q is neither poisson nor bursty", a.Process)
}

// arrivals is an arrival process under way.
type arrivals struct {
	spec     ArrivalSpec
	now      float64 // nanoseconds from the start
	on       bool    // bursty: in an on spell
	switchAt float64 // bursty: when the spell ends
	started  bool
}

// next is the next arrival; false once it would be past what a Duration
// holds (some 292 years).
func (a *arrivals) next(rng *rand.Rand) (time.Duration, bool) {
	if a.spec.Process != "bursty" {
		a.now += float64(rng.ExpFloat64() / a.spec.Rate * float64(time.Second)) // float64(): see spell
		return a.at()
	}
	if !a.started {
		// Start in a spell drawn by the time spent in each, as if the
		// process had been running for ever.
		on, off := float64(a.spec.MeanOn), float64(a.spec.MeanOff)
		a.on = rng.Float64()*(on+off) < on
		a.switchAt = a.now + a.spell(rng)
		a.started = true
	}
	for a.now < math.MaxInt64 {
		rate := a.spec.RateOff
		if a.on {
			rate = a.spec.RateOn
		}
		if rate > 0 {
			// Gaps are memoryless: a gap that runs past the spell's end
			// is dropped and drawn again at the new rate from there.
			gap := float64(rng.ExpFloat64() / rate * float64(time.Second))
			if a.now+gap < a.switchAt {
				a.now += gap
				return a.at()
			}
		}
		a.now = a.switchAt
		a.on = !a.on
		a.switchAt = a.now + a.spell(rng)
	}
	return 0, false
}

// spell is how long the spell just begun lasts. The float64() keeps the
// product rounded: without it a compiler may fuse it with the sum it goes
// into (arm64 does), and the same seed would give other times there.
func (a *arrivals) spell(rng *rand.Rand) float64 {
	mean := a.spec.MeanOff
	if a.on {
		mean = a.spec.MeanOn
	}
	return float64(rng.ExpFloat64() * float64(mean))
}

func (a *arrivals) at() (time.Duration, bool) {
	if a.now >= math.MaxInt64-float64(time.Millisecond) {
		return 0, false
	}
	return roundMilli(a.now), true
}
