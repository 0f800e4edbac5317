// Package hindsight measures a learning price against the best fixed
// price in hindsight (DESIGN.md, revision 5): the same scenario, trace and
// seeds run under every price of the learner's grid posted by every
// server, under the learner, and under the scenario's own policies (a
// posted and a surge price), side by side, paired by seed; and the
// learner's regret against the best of the grid as the offers per server
// grow. bourse sim learn runs it; docs/sim.md records its results.
package hindsight

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim"
)

// Options are a benchmark's settings; their zero values take the
// scenario's own.
type Options struct {
	// Learner is the scenario's learning policy to measure; the first
	// of kind learning if empty. Its curves are the base the grid
	// multiplies. A scenario without one learns around Base.
	Learner string
	// Base is the scenario's posted policy whose curves the grid
	// multiplies ("posted" if empty) where the scenario has no learning
	// policy; the learner and the fixed prices take its time limit and
	// counter TTL too.
	Base string
	// Floor, Ceiling, Levels, Epoch and MaxEpoch set the learner's grid
	// and epochs (server.LearningConfig; its defaults where zero).
	Floor, Ceiling  decimal.Decimal
	Levels          int
	Epoch, MaxEpoch time.Duration
	// Compare are the scenario's policies to run beside the learner:
	// every policy of the file but Base's learners if empty.
	Compare []string
	// Seeds override the file's.
	Seeds []uint64
	// Strategy, if set, gives every client that strategy kind (fixed,
	// cheapest, adaptive, deadline), its other settings at their
	// defaults: the same market against strategic or plain bidders.
	Strategy string
	// Patience, if positive, is every client's patience instead of its
	// own: how long a job refused waits to offer again, and so whether
	// clients wait out a high price.
	Patience time.Duration
	// Jobs, if positive, is the workload's number of jobs instead of the
	// file's.
	Jobs int
	// TrackEvery notes the takings every so many arrivals, for the
	// regret curve; 100 if zero.
	TrackEvery int
}

// Labels of the runs: the learner, and each fixed price by its level.
const (
	LearnerLabel = "learning"
	BestLabel    = "best fixed"
)

// FixedLabel is the label of the runs at multiplier m of the base.
func FixedLabel(m decimal.Decimal) string { return "fixed-x" + m.String() }

// Setup says which runs are which.
type Setup struct {
	Scenario string
	Servers  int
	// Multipliers are the grid, ascending; Grid their runs' labels.
	Multipliers []decimal.Decimal
	Grid        []string
	Others      []string // the scenario's policies run beside
	Seeds       []uint64
	Learner     server.LearningConfig
}

// Plans makes the benchmark's runs: each seed under each fixed price of
// the grid, the learner and the other policies, all on the same
// workload.
func Plans(f *scenario.File, opt Options) ([]sim.Plan, Setup, error) {
	g := *f
	g.Policies = maps.Clone(f.Policies)
	learner, err := learnerOf(f, opt)
	if err != nil {
		return nil, Setup{}, err
	}
	if opt.Levels != 0 {
		learner.Levels = opt.Levels
	}
	if opt.Epoch != 0 {
		learner.Epoch = opt.Epoch
	}
	if opt.MaxEpoch != 0 {
		learner.MaxEpoch = opt.MaxEpoch
	}
	if !opt.Floor.IsZero() {
		learner.Floor = opt.Floor.String()
	}
	if !opt.Ceiling.IsZero() {
		learner.Ceiling = opt.Ceiling.String()
	}
	// The fixed prices are the learner's base, posted as it is.
	base := learner
	base.Kind, base.Floor, base.Ceiling, base.Levels, base.Epoch, base.MaxEpoch, base.Seed = "", "", "", 0, 0, 0, 0
	built, err := learner.Build()
	if err != nil {
		return nil, Setup{}, fmt.Errorf("hindsight: the learner: %w", err)
	}
	l := server.LearnerOf(built)
	setup := Setup{Scenario: f.Name, Multipliers: l.Multipliers(), Learner: l.Config(), Others: opt.Compare}
	if len(setup.Others) == 0 {
		for _, name := range f.PolicyNames() {
			if f.Policies[name].Kind != "learning" {
				setup.Others = append(setup.Others, name)
			}
		}
	}
	for _, name := range f.PolicyNames() {
		if f.Policies[name].Kind == "learning" {
			delete(g.Policies, name) // the learner runs as LearnerLabel
		}
	}
	g.Policies[LearnerLabel] = learner
	for _, m := range setup.Multipliers {
		fixed := base
		fixed.P, fixed.Q = scale(base.P, m), scale(base.Q, m)
		label := FixedLabel(m)
		g.Policies[label] = fixed
		setup.Grid = append(setup.Grid, label)
	}
	g.Clients = slices.Clone(f.Clients)
	if f.DefaultClient != nil {
		d := *f.DefaultClient
		g.DefaultClient = &d
	}
	for _, c := range append(sliceOf(g.Clients), g.DefaultClient) {
		if c == nil {
			continue
		}
		if opt.Strategy != "" {
			c.Strategy = scenario.StrategyRef{Kind: opt.Strategy, Slack: c.Strategy.Slack}
		}
		if opt.Patience > 0 {
			c.Patience = opt.Patience
		}
	}
	if opt.Jobs > 0 {
		g.Workload.Jobs = opt.Jobs
	}
	servers, _, _, err := g.Market(LearnerLabel)
	if err != nil {
		return nil, Setup{}, err
	}
	setup.Servers = len(servers)
	names := append(append([]string{LearnerLabel}, setup.Others...), setup.Grid...)
	plans, err := sim.Plans(&g, names, sim.PlanOptions{Seeds: opt.Seeds, TrackEvery: cmp.Or(opt.TrackEvery, 100)})
	if err != nil {
		return nil, Setup{}, err
	}
	for _, p := range plans {
		if !slices.Contains(setup.Seeds, p.Seed) {
			setup.Seeds = append(setup.Seeds, p.Seed)
		}
	}
	return plans, setup, nil
}

// scale multiplies the y of each breakpoint of a curve, as a policy file
// writes it, by m: exactly, since the grid's multipliers are decimals.
func scale(c [][]string, m decimal.Decimal) [][]string {
	var out [][]string
	for _, pt := range c {
		if len(pt) != 2 {
			return c // a broken curve: Build says so when the run starts
		}
		y, err := decimal.NewFromString(pt[1])
		if err != nil {
			return c
		}
		out = append(out, []string{pt[0], y.Mul(m).String()})
	}
	return out
}

// learnerOf is the learning policy the benchmark measures: the one
// Options.Learner names, the scenario's first of kind learning, or one
// built around the posted policy Options.Base.
func learnerOf(f *scenario.File, opt Options) (server.PolicyConfig, error) {
	if opt.Learner != "" {
		p, ok := f.Policies[opt.Learner]
		if !ok || p.Kind != "learning" {
			return p, fmt.Errorf("hindsight: %s has no learning policy %q (it has %v)", f.Name, opt.Learner, f.PolicyNames())
		}
		return p, nil
	}
	if opt.Base == "" {
		for _, name := range f.PolicyNames() {
			if p := f.Policies[name]; p.Kind == "learning" {
				return p, nil
			}
		}
	}
	name := cmp.Or(opt.Base, "posted")
	p, ok := f.Policies[name]
	if !ok || (p.Kind != "" && p.Kind != "reserve" && p.Kind != "posted") {
		return p, fmt.Errorf("hindsight: %s has no learning policy, nor a posted policy %q to learn around (it has %v)", f.Name, name, f.PolicyNames())
	}
	p.Kind = "learning"
	return p, nil
}

// sliceOf is pointers to each client, to change them in place.
func sliceOf(cs []scenario.ClientFile) []*scenario.ClientFile {
	out := make([]*scenario.ClientFile, len(cs))
	for i := range cs {
		out[i] = &cs[i]
	}
	return out
}
