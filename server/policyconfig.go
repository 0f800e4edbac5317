package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// PolicyConfig is a policy stack as operators (bourse server's
// configuration) and simulation scenarios write it: a base — a posted price
// (kind reserve), one indexed by utilization (kind utilisation) or one
// that learns (kind learning) — then, each optional, preemption, bookings
// and fair use. Build assembles it.
type PolicyConfig struct {
	Kind string     `yaml:"kind" json:"kind"` // reserve (the default), utilisation or learning
	P    [][]string `yaml:"p" json:"p"`       // the reserve curves, as an offer writes them
	Q    [][]string `yaml:"q" json:"q"`
	K    string     `yaml:"k" json:"k"` // utilisation only: Utilization.K
	// Learning only (LearningConfig): the grid of multipliers of p and q
	// from floor to ceiling in levels steps, each posted for an epoch at
	// a time, the choices seeded by seed.
	Floor        string        `yaml:"floor" json:"floor"`
	Ceiling      string        `yaml:"ceiling" json:"ceiling"`
	Levels       int           `yaml:"levels" json:"levels"`
	Epoch        time.Duration `yaml:"epoch" json:"epoch"`
	MaxEpoch     time.Duration `yaml:"max_epoch" json:"max_epoch"`
	Seed         uint64        `yaml:"seed" json:"seed"`
	MaxTimeLimit time.Duration `yaml:"max_time_limit" json:"max_time_limit"`
	CounterTTL   time.Duration `yaml:"counter_ttl" json:"counter_ttl"`
	// Preempt lets a guaranteed offer that pays more take the GPUs of
	// running preemptible contracts.
	Preempt bool `yaml:"preempt" json:"preempt"`
	// Bookings, when set, takes offers with a future start_at: the GPUs
	// are reserved for that slot, preemptible work may use them until then.
	Bookings *BookingsConfig `yaml:"bookings" json:"bookings"`
	// FairUse rules, each off when zero.
	FairUse FairUseConfig `yaml:"fair_use" json:"fair_use"`
}

// BookingsConfig is the Bookings layer of a PolicyConfig.
type BookingsConfig struct {
	MaxAhead     time.Duration `yaml:"max_ahead" json:"max_ahead"`
	OnePerClient bool          `yaml:"one_per_client" json:"one_per_client"`
}

// FairUseConfig is the FairUse layer of a PolicyConfig.
type FairUseConfig struct {
	MinTimeLimit time.Duration `yaml:"min_time_limit" json:"min_time_limit"`
	MaxTimeLimit time.Duration `yaml:"max_time_limit" json:"max_time_limit"`
	MaxRunning   int           `yaml:"max_running" json:"max_running"`
	Cooldown     time.Duration `yaml:"cooldown" json:"cooldown"`
}

// Build assembles the stack: base → Preempting → Bookings → FairUse.
// Preemption and bookings see the base policy's decision; fair use has the
// last word. Its errors name the field ("policy.k").
func (c PolicyConfig) Build() (Policy, error) {
	curve := func(name string, pairs [][]string) (contract.Curve, error) {
		if pairs == nil {
			return nil, nil
		}
		data, _ := json.Marshal(pairs)
		var cv contract.Curve
		if err := json.Unmarshal(data, &cv); err != nil {
			return nil, fmt.Errorf("policy.%s: %w", name, err)
		}
		return cv, nil
	}
	p, err := curve("p", c.P)
	if err != nil {
		return nil, err
	}
	q, err := curve("q", c.Q)
	if err != nil {
		return nil, err
	}
	posted := Posted{P: p, Q: q, MaxTimeLimit: c.MaxTimeLimit, CounterTTL: c.CounterTTL}
	learning := c.Kind == "learning"
	if !learning && (c.Floor != "" || c.Ceiling != "" || c.Levels != 0 || c.Epoch != 0 || c.MaxEpoch != 0 || c.Seed != 0) {
		return nil, errors.New("policy.floor, ceiling, levels, epoch, max_epoch and seed are for the learning policy")
	}
	var pol Policy
	switch c.Kind {
	case "", "reserve", "posted":
		if c.K != "" {
			return nil, errors.New("policy.k is for the utilisation policy")
		}
		pol = posted
	case "utilisation", "utilization":
		k, err := decimal.NewFromString(c.K)
		if err != nil {
			return nil, fmt.Errorf("policy.k %q: want a decimal number", c.K)
		}
		pol = Utilization{Base: posted, K: k}
	case "learning":
		if c.K != "" {
			return nil, errors.New("policy.k is for the utilisation policy")
		}
		l, err := c.learning(posted)
		if err != nil {
			return nil, err
		}
		pol = l
	default:
		return nil, fmt.Errorf("policy %q: want reserve, utilisation or learning", c.Kind)
	}
	if c.Preempt {
		pol = Preempting{Base: pol}
	}
	if b := c.Bookings; b != nil {
		pol = Bookings{Base: pol, MaxAhead: b.MaxAhead, OnePerClient: b.OnePerClient}
	}
	if fu := c.FairUse; fu != (FairUseConfig{}) {
		pol = FairUse{Base: pol, MinTimeLimit: fu.MinTimeLimit, MaxTimeLimit: fu.MaxTimeLimit, MaxRunning: fu.MaxRunning, Cooldown: fu.Cooldown}
	}
	if v, ok := pol.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
	}
	return pol, nil
}

// learning builds the learning base over the posted price's curves.
func (c PolicyConfig) learning(base Posted) (*Learning, error) {
	mult := func(name, v string) (decimal.Decimal, error) {
		if v == "" {
			return decimal.Zero, nil
		}
		d, err := decimal.NewFromString(v)
		if err != nil || d.IsNegative() {
			return decimal.Zero, fmt.Errorf("policy.%s %q: want a multiplier of p and q above 0, like 0.5 (0 for the default)", name, v)
		}
		return d, nil // 0: the default
	}
	floor, err := mult("floor", c.Floor)
	if err != nil {
		return nil, err
	}
	ceiling, err := mult("ceiling", c.Ceiling)
	if err != nil {
		return nil, err
	}
	l, err := NewLearning(LearningConfig{Base: base, Floor: floor, Ceiling: ceiling, Levels: c.Levels, Epoch: c.Epoch, MaxEpoch: c.MaxEpoch, Seed: c.Seed})
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return l, nil
}
