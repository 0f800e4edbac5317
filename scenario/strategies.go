package scenario

import (
	"fmt"

	"github.com/bourse/bourse/bidder/strategy"
)

// Strategies are the bidding strategies a scenario may name.
var Strategies = []string{"fixed", "cheapest", "adaptive", "deadline"}

// Build makes the strategy; each call a new one, so that strategies that
// learn (adaptive) learn for one client alone.
func (s StrategyRef) Build() (strategy.Strategy, error) {
	if s.Slack != 0 && s.Slack <= 1 {
		return nil, fmt.Errorf("slack %v: the time limit must exceed the run time, want more than 1", s.Slack)
	}
	set := func(name string, ok bool) error {
		if !ok {
			return fmt.Errorf("%s is not a setting of the %s strategy", name, s.Kind)
		}
		return nil
	}
	switch s.Kind {
	case "fixed":
		if err := firstErr(set("start", s.Start.IsZero()), set("step", s.Step.IsZero()), set("base", s.Base.IsZero()), set("window", s.Window == 0)); err != nil {
			return nil, err
		}
		return strategy.Fixed{Slack: s.Slack}, nil
	case "cheapest":
		if err := firstErr(set("step", s.Step.IsZero()), set("base", s.Base.IsZero()), set("window", s.Window == 0)); err != nil {
			return nil, err
		}
		return strategy.Cheapest{Start: s.Start, Slack: s.Slack}, nil
	case "adaptive":
		if err := firstErr(set("start", s.Start.IsZero()), set("base", s.Base.IsZero()), set("window", s.Window == 0)); err != nil {
			return nil, err
		}
		return &strategy.Adaptive{Step: s.Step, Slack: s.Slack}, nil
	case "deadline":
		if err := firstErr(set("start", s.Start.IsZero()), set("step", s.Step.IsZero())); err != nil {
			return nil, err
		}
		return strategy.Deadline{Base: s.Base, Window: s.Window, Slack: s.Slack}, nil
	case "":
		return nil, fmt.Errorf("a client needs a strategy: one of %v", Strategies)
	}
	return nil, fmt.Errorf("no strategy %q: want one of %v", s.Kind, Strategies)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
