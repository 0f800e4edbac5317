package bidder

import "github.com/bourse/bourse/bidder/strategy"

// The strategies live in package strategy, which links no NATS, so that
// the simulator runs them without it. These names keep code written
// against package bidder compiling while it moves to package strategy;
// new code names package strategy.
type (
	Job      = strategy.Job
	Strategy = strategy.Strategy
	Fixed    = strategy.Fixed
	Cheapest = strategy.Cheapest
	Adaptive = strategy.Adaptive
	Deadline = strategy.Deadline
)
