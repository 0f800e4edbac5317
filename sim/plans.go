package sim

import (
	"fmt"
	"io"
	"time"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim/workload"
)

// ForgetAfter is how long a scenario's runs keep ended contracts (Config.Forget).
const ForgetAfter = 6 * time.Hour

// PlanOptions are the command line's say in a scenario's runs.
type PlanOptions struct {
	// Seeds override the file's seeds.
	Seeds []uint64
	// Log, if set, opens the contract log of a run (policy, seed).
	Log func(policy string, seed uint64) (io.WriteCloser, error)
	// Standing is whether jobs wait in the House's book (Config.Standing):
	// each value given makes each policy's runs once, those with it on
	// labelled policy+standing. Empty is off.
	Standing []bool
	// TrackEvery notes each run's takings every so many arrivals
	// (Config.TrackEvery); zero for none.
	TrackEvery int
	// RouteTo overrides the file's route_to: each value given makes each
	// policy's runs once, labelled policy+route=N (RouteAll: policy+route=all,
	// every offer to every server whose ask it meets). Empty is the file's.
	RouteTo []int
}

// RouteAll in PlanOptions.RouteTo routes every offer to every server
// whose ask it meets: routing to all, against which routing to a few is
// measured.
const RouteAll = -1

// routeLabel is what a run routing to at most k servers adds to its
// policy's label.
func routeLabel(k int) string {
	if k == RouteAll {
		return "+route=all"
	}
	return fmt.Sprintf("+route=%d", k)
}

// StandingLabel is added to the policy of runs with standing offers.
const StandingLabel = "+standing"

// Plans makes the runs of a scenario: each seed under each policy. A
// policy of "" gives every server its own policy from the file (the
// policy is then named "scenario" in the results); a name gives every
// server that named policy.
func Plans(f *scenario.File, policies []string, opt PlanOptions) ([]Plan, error) {
	seeds := opt.Seeds
	if len(seeds) == 0 {
		seeds = f.Seeds
	}
	if len(seeds) == 0 {
		seeds = []uint64{1}
	}
	if len(policies) == 0 {
		policies = []string{""}
	}
	var plans []Plan
	for _, pol := range policies {
		if _, ok := f.Policies[pol]; pol != "" && !ok {
			return nil, fmt.Errorf("--policy %q: %s has no such policy (it has %v)", pol, f.Name, f.PolicyNames())
		}
		// Fail before any run starts if a server's own policy is wrong.
		if _, _, _, err := f.Market(pol); err != nil {
			return nil, err
		}
		label := pol
		if label == "" {
			label = "scenario"
		}
		modes := opt.Standing
		if len(modes) == 0 {
			modes = []bool{false}
		}
		routes := opt.RouteTo
		if len(routes) == 0 {
			routes = []int{0}
		}
		for _, standing := range modes {
			for _, k := range routes {
				name := label
				if standing {
					name += StandingLabel
				}
				if k != 0 {
					name += routeLabel(k)
				}
				for _, seed := range seeds {
					plans = append(plans, Plan{Policy: name, Seed: seed, Build: func() (Config, func() error, error) {
						cfg, closer, err := configFor(f, pol, name, seed, opt)
						cfg.Standing = standing
						switch {
						case k == RouteAll:
							cfg.Exchange.RouteTo = len(cfg.Servers)
						case k > 0:
							cfg.Exchange.RouteTo = k
						}
						return cfg, closer, err
					}})
				}
			}
		}
	}
	return plans, nil
}

// configFor is the run of f under policy ("" for the servers' own),
// named label, with seed.
func configFor(f *scenario.File, policy, label string, seed uint64, opt PlanOptions) (Config, func() error, error) {
	servers, clients, def, err := f.Market(policy)
	if err != nil {
		return Config{}, nil, err
	}
	src, closer, err := workload.Open(f.Workload, f.Dir, seed)
	if err != nil {
		return Config{}, nil, fmt.Errorf("workload: %w", err)
	}
	closeSrc := closer.Close
	cfg := Config{Scenario: f.Name, Servers: servers, Clients: clients, Default: def, Workload: src,
		Horizon: f.Horizon, Limit: f.Limit, Sample: f.Sample, ReadingEvery: f.ReadingEvery,
		Forget: ForgetAfter, TrackEvery: opt.TrackEvery}
	cfg.Exchange.RouteTo = f.RouteTo
	closeAll := closeSrc
	if opt.Log != nil {
		w, err := opt.Log(label, seed)
		if err != nil {
			closeSrc()
			return Config{}, nil, err
		}
		cfg.Log = w
		closeAll = func() error {
			errW := w.Close()
			if err := closeSrc(); err != nil {
				return err
			}
			return errW
		}
	}
	return cfg, closeAll, nil
}
