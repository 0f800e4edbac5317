package bidder

import "github.com/bourse/bourse/bidder/strategy"

// The strategies live in package strategy, which links no NATS, so that
// the simulator runs them without it. These names keep code written
// against package bidder (market/spec.go, cmd/bourse/amounts_test.go)
// compiling while it moves to package strategy; new code names package
// strategy.
type (
	Strategy = strategy.Strategy
	Fixed    = strategy.Fixed
	Cheapest = strategy.Cheapest
	Adaptive = strategy.Adaptive
	Deadline = strategy.Deadline
)
