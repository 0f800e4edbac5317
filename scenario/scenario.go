// Package scenario is a market to run: its currency, its GPU servers with
// their policies, its bidding clients with their budgets, values and
// strategies, and the jobs the clients make up. bourse demo trades the
// default scenario over NATS (package market); the simulator (package sim)
// runs scenarios in process on a virtual clock. Nothing here talks to NATS
// or reads a clock.
package scenario

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/server"
)

// Currency is the scenarios' money: credits with cents.
var Currency = currency.Currency{Code: "CRED", Scale: 2}

// ServerSpec describes one simulated GPU server.
type ServerSpec struct {
	ID        string
	Model     string
	MemoryMiB int
	Count     int
	Policy    server.Policy
}

// GPUs lists the server's devices.
func (s ServerSpec) GPUs() []contract.GPU {
	gs := make([]contract.GPU, s.Count)
	for i := range gs {
		gs[i] = contract.GPU{Index: i, Model: s.Model, MemoryMiB: s.MemoryMiB}
	}
	return gs
}

// ClientSpec describes one bidding agent.
type ClientSpec struct {
	ID       string
	Budget   decimal.Decimal
	Strategy strategy.Strategy
	// Value is what a GPU-second of use is worth to it at most.
	Value decimal.Decimal
	// Model, if set, is the only GPU model its jobs run on.
	Model    string
	MaxGPUs  int           // jobs ask for 1..MaxGPUs GPUs
	Parallel int           // jobs it runs at once, 1 by default
	Runtime  time.Duration // jobs run for Runtime/2..Runtime at full scale
	// Patience is how long, in a simulation, a job waits for capacity
	// before its client gives up on it (a day if zero); a job with a
	// deadline waits only while it could still finish in time.
	Patience time.Duration
	// Allowance, if set, pays the client's wallet an allowance (package
	// currency/allowance): in a simulation, and in the demo market.
	Allowance *Allowance
	// CapGPUs, if positive, caps the GPUs the client may hold in contracts
	// at once (caps.GPUCode), in the demo market.
	CapGPUs int
	// DailySpend, if positive, caps what the client may commit a day
	// (caps.Spend, warned at 80%), in the demo market.
	DailySpend decimal.Decimal
}

// Allowance is dx/dt = A − B·x on a wallet: A paid per hour, B the share
// of the balance that decays per hour, paid every Period (an hour if
// zero).
type Allowance struct {
	A      decimal.Decimal `yaml:"a"`
	B      decimal.Decimal `yaml:"b"`
	Period time.Duration   `yaml:"period"`
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// DefaultServers are four servers with different classes and policies:
// posted prices on the big machines, prices that rise with use on the
// others.
func DefaultServers() []ServerSpec {
	return []ServerSpec{
		{ID: "atlas", Model: "H100", MemoryMiB: 81920, Count: 8, Policy: server.Posted{P: contract.Flat(dec("0.30"))}},
		{ID: "boreal", Model: "H100", MemoryMiB: 81920, Count: 4, Policy: server.Utilization{Base: server.Posted{P: contract.Flat(dec("0.20"))}, K: dec("2")}},
		{ID: "cirrus", Model: "A100", MemoryMiB: 40960, Count: 8, Policy: server.Posted{P: contract.Ramp(dec("0.5"), dec("4"), dec("0.16"))}},
		{ID: "dune", Model: "L4", MemoryMiB: 24576, Count: 4, Policy: server.Utilization{Base: server.Posted{P: contract.Flat(dec("0.06"))}, K: dec("1")}},
	}
}

// DefaultClients are eight bidders with budgets, values and strategies
// that differ.
func DefaultClients() []ClientSpec {
	var cs []ClientSpec
	strategies := []func() strategy.Strategy{
		func() strategy.Strategy { return strategy.Fixed{} },
		func() strategy.Strategy { return strategy.Cheapest{} },
		func() strategy.Strategy { return &strategy.Adaptive{} },
	}
	names := []string{"ada", "bea", "cyd", "dov", "eli", "fen", "gus", "hal"}
	values := []string{"0.40", "0.25", "0.60", "0.12", "0.35", "0.20", "0.50", "0.08"}
	budgets := []string{"30", "15", "45", "8", "25", "12", "40", "6"}
	models := []string{"H100", "", "H100", "", "A100", "", "", "L4"}
	for i, n := range names {
		cs = append(cs, ClientSpec{
			ID: n, Budget: dec(budgets[i]), Strategy: strategies[i%3](), Value: dec(values[i]),
			Model: models[i], MaxGPUs: 1 + i%4, Runtime: time.Duration(2+i%3) * time.Second, Parallel: 2,
		})
	}
	return cs
}

// StrategyName names a strategy for tables.
func StrategyName(s strategy.Strategy) string {
	switch s.(type) {
	case strategy.Fixed:
		return "fixed"
	case strategy.Cheapest:
		return "cheapest"
	case *strategy.Adaptive:
		return "adaptive"
	case strategy.Deadline, *strategy.Deadline:
		return "deadline"
	}
	return fmt.Sprintf("%T", s)
}

// Job makes up the client's n-th job from its random stream: 1..MaxGPUs
// GPUs of its model, busy 50–100%, running Runtime/2..Runtime stretched by
// scale, worth Value.
func (s ClientSpec) Job(rng *rand.Rand, n int, scale float64) strategy.Job {
	half := float64(s.Runtime) / 2 * scale
	runtime := time.Duration(half + rng.Float64()*half).Round(10 * time.Millisecond)
	return strategy.Job{
		Name: fmt.Sprintf("%s-job%d", s.ID, n), Currency: string(Currency.Code), Scale: Currency.Scale,
		GPUs: 1 + rng.IntN(s.MaxGPUs), Class: contract.Class{Model: s.Model},
		Runtime: runtime, Utilization: decimal.New(int64(50+rng.IntN(51)), -2), Value: s.Value,
	}
}
