package scenario

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim/workload"
)

// A bound is the range a numeric field of a scenario may hold. Past it a
// run would spin (readings every nanosecond), run out of memory (a
// billion servers, a sample every nanosecond) or mean nothing (a negative
// budget). docs/sim.md lists every bound under "Bounds"; TestBoundsDocumented
// keeps the two the same.
type bound struct {
	field string // as docs/sim.md names it: servers[].gpus
	kind  kind
	// min and max are inclusive, in the field's unit (seconds for a
	// duration); above makes min exclusive.
	min, max float64
	above    bool
	// zero, if set, is what 0 means where min excludes it.
	zero string
}

type kind int

const (
	whole    kind = iota // an integer
	number               // a real number
	duration             // a Go duration: 90s, 1h30m
	money                // a decimal string: "12.50"
)

const (
	year   = 365 * 24 * time.Hour
	decade = workload.MaxTime
)

func secs(d time.Duration) float64 { return d.Seconds() }

// The bounds, in the order docs/sim.md lists them.
var (
	bSeeds        = bound{field: "seeds (how many)", kind: whole, min: 1, max: 1000, zero: "[1]"}
	bHorizon      = bound{field: "horizon", kind: duration, min: 1, max: secs(decade), zero: "no horizon"}
	bLimit        = bound{field: "limit", kind: duration, min: 1, max: secs(decade), zero: "horizon + 30 days, or a year"}
	bSample       = bound{field: "sample", kind: duration, min: 1, max: secs(decade), zero: "an hour"}
	bSamples      = bound{field: "samples in a run (limit / sample)", kind: whole, min: 1, max: 1_000_000}
	bReadingEvery = bound{field: "reading_every", kind: duration, min: 1, max: secs(24 * time.Hour), zero: "a minute"}
	bRouteTo      = bound{field: "route_to", kind: whole, min: 1, max: 100_000, zero: "8"}
	bGPUs         = bound{field: "servers[].gpus", kind: whole, min: 1, max: workload.MaxJobGPUs}
	bReplicas     = bound{field: "servers[].replicas", kind: whole, min: 1, max: 100_000, zero: "one"}
	bMemory       = bound{field: "servers[].memory_mib", kind: whole, min: 0, max: 1 << 24}
	bServers      = bound{field: "servers in all (replicas added up)", kind: whole, min: 1, max: 100_000}
	bAllGPUs      = bound{field: "GPUs in all", kind: whole, min: 1, max: 1_000_000}
	bBudget       = bound{field: "clients[].budget", kind: money, min: 0, max: 1e12}
	bValue        = bound{field: "clients[].value", kind: money, min: 0, above: true, max: 1e6}
	bPatience     = bound{field: "clients[].patience", kind: duration, min: 1, max: secs(year), zero: "a day"}
	bAllowanceA   = bound{field: "clients[].allowance.a", kind: money, min: 0, max: 1e12}
	bAllowanceB   = bound{field: "clients[].allowance.b", kind: money, min: 0, max: 1e6}
	bPeriod       = bound{field: "clients[].allowance.period", kind: duration, min: 60, max: secs(year), zero: "an hour"}
	bStart        = bound{field: "clients[].strategy.start", kind: money, min: 0, above: true, max: 1, zero: "0.5"}
	bStep         = bound{field: "clients[].strategy.step", kind: money, min: 0, above: true, max: 1, zero: "0.1"}
	bBase         = bound{field: "clients[].strategy.base", kind: money, min: 0, above: true, max: 1, zero: "0.3"}
	bWindow       = bound{field: "clients[].strategy.window", kind: duration, min: 1, max: secs(year), zero: "10 × the job's run time"}
	bSlack        = bound{field: "clients[].strategy.slack", kind: number, min: 1, above: true, max: 100, zero: "1.5"}
	bK            = bound{field: "policies.*.k", kind: money, min: 0, max: 1000}
	bPolicyTime   = bound{field: "policies.*: max_time_limit, counter_ttl, bookings.max_ahead, fair_use.min_time_limit, fair_use.max_time_limit, fair_use.cooldown",
		kind: duration, min: 0, max: secs(decade)}
	bMaxRunning = bound{field: "policies.*.fair_use.max_running", kind: whole, min: 1, max: 1_000_000, zero: "no cap"}
	// The learning policy's grid and epoch (server.LearningConfig, whose
	// own checks these are).
	bLevels = bound{field: "policies.*.levels", kind: whole, min: 2, max: server.MaxLearningLevels, zero: strconv.Itoa(server.DefaultLearningLevels)}
	bFloor  = bound{field: "policies.*.floor, policies.*.ceiling", kind: money, min: 0, above: true, max: server.MaxLearningMultiplier,
		zero: server.DefaultLearningFloor.String() + " and " + server.DefaultLearningCeiling.String()}
	bEpoch    = bound{field: "policies.*.epoch", kind: duration, min: 1, max: secs(decade), zero: server.DefaultLearningEpoch.String()}
	bMaxEpoch = bound{field: "policies.*.max_epoch", kind: duration, min: 1, max: secs(decade), zero: "the epoch (epochs do not grow)"}
)

// bounds are all of them, for the docs.
var bounds = []bound{bSeeds, bHorizon, bLimit, bSample, bSamples, bReadingEvery, bRouteTo, bGPUs, bReplicas, bMemory, bServers, bAllGPUs,
	bBudget, bValue, bPatience, bAllowanceA, bAllowanceB, bPeriod, bStart, bStep, bBase, bWindow, bSlack, bK, bPolicyTime, bMaxRunning,
	bLevels, bFloor, bEpoch, bMaxEpoch}

// want says the bound for a person: "1 to 1024, or 0 for one".
func (b bound) want() string {
	f := func(v float64) string {
		switch b.kind {
		case duration:
			return time.Duration(v * float64(time.Second)).String()
		case money:
			return decimal.NewFromFloat(v).String()
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	var s string
	if b.above {
		s = fmt.Sprintf("more than %s, at most %s", f(b.min), f(b.max))
	} else {
		s = fmt.Sprintf("%s to %s", f(b.min), f(b.max))
	}
	if b.zero != "" {
		s += ", or 0 for " + b.zero
	}
	return s
}

// doc is the bound's line in docs/sim.md.
func (b bound) doc() string { return "| " + b.field + " | " + b.want() + " |" }

// in reports whether v is within b (0 allowed where it has a meaning).
func (b bound) in(v float64) bool {
	if v == 0 && b.zero != "" {
		return true
	}
	low := v >= b.min
	if b.above {
		low = v > b.min
	}
	return low && v <= b.max // false for NaN
}

func (b bound) err(path, value string) error {
	return fieldErr(path, "%s is out of bounds: want %s", value, b.want())
}

func (b bound) whole(path string, v int) error {
	if !b.in(float64(v)) {
		return b.err(path, strconv.Itoa(v))
	}
	return nil
}

func (b bound) duration(path string, d time.Duration) error {
	if !b.in(d.Seconds()) {
		return b.err(path, d.String())
	}
	return nil
}

func (b bound) number(path string, v float64) error {
	if math.IsInf(v, 0) || !b.in(v) {
		return b.err(path, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return nil
}

func (b bound) money(path string, d decimal.Decimal) error {
	if !b.in(d.InexactFloat64()) {
		return b.err(path, strconv.Quote(d.String()))
	}
	return nil
}

// BoundLines are the bounds as docs/sim.md's table lists them.
func BoundLines() []string {
	out := make([]string, len(bounds))
	for i, b := range bounds {
		out[i] = b.doc()
	}
	return out
}
