package server

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Defaults and bounds of LearningConfig.
const (
	DefaultLearningLevels = 9
	DefaultLearningEpoch  = 15 * time.Minute
	MaxLearningLevels     = 64
	// MaxLearningMultiplier bounds the ceiling: a thousand times the base
	// price is past any market's range, and a typo's.
	MaxLearningMultiplier = 1000
)

// DefaultLearningFloor and DefaultLearningCeiling are the grid's ends
// when the operator sets neither: from half the base price to four times
// it.
var (
	DefaultLearningFloor   = decimal.RequireFromString("0.5")
	DefaultLearningCeiling = decimal.NewFromInt(4)
)

// LearningConfig configures a Learning policy.
type LearningConfig struct {
	// Base is the operator's posted price: each level posts its curves
	// times the level's multiplier, and its time limit and counter TTL.
	Base Posted
	// Floor and Ceiling are the least and the greatest multiplier of the
	// base curves; the levels lie on a geometric grid between them, both
	// included. Zero for the defaults (0.5 and 4).
	Floor, Ceiling decimal.Decimal
	// Levels is how many prices the grid has, DefaultLearningLevels if 0.
	Levels int
	// Epoch is how long one price is posted before the policy chooses
	// again, DefaultLearningEpoch if 0: long enough for a few contracts
	// to start at it.
	Epoch time.Duration
	// MaxEpoch, when above Epoch, lets the epochs grow as the learner
	// settles: the k-th epoch after each level has been posted once lasts
	// Epoch×√(k/levels), up to MaxEpoch; 0 (or Epoch) keeps every epoch
	// at Epoch. A price that changes faster than clients wait teaches
	// patient clients to wait for a cheap epoch (Feldman et al., NeurIPS
	// 2016), and every change is a chance to lose what the last level
	// earned (bandits with switching costs need T^(2/3) regret, Dekel et
	// al., STOC 2014): epochs that lengthen switch less as there is less
	// left to learn, the way batched bandits do. docs/pricing.md says
	// when to set it.
	MaxEpoch time.Duration
	// Seed seeds its choices: the same seed and the same outcomes post the
	// same prices.
	Seed uint64
}

// Learning is a posted price that learns which price earns the server the
// most, over a geometric grid of multiples of the operator's base price:
// Thompson sampling (as in Ferreira, Simchi-Levi and Wang, Operations
// Research 2018) on a model of a server that sells renewable GPUs. Every
// epoch it draws, for each level, the rate at which contracts start there
// per second of room (a Gamma posterior over starts and the GPU-weighted
// time the server had free GPUs while the level was posted, made
// non-increasing in the price, since demand falls as prices rise) and what
// a GPU-second held earns there; it turns each into what the level would
// earn were it posted for good, on a server whose free GPUs take in work
// at that rate and whose busy ones give it back as jobs end, and posts
// the level whose draw earns most. Each level is posted once first.
// docs/pricing.md says why this model and not the programme of Ferreira
// et al., which assumes that capacity is sold out and never comes back.
//
// A full server refuses offers for want of GPUs, which says nothing of
// its price, and the exchange routes an offer only to servers whose ask
// it meets, so that a dear server sees almost only offers that pay it:
// it learns from the rate of work won per unit of time it had room, never
// from the share of offers it took.
//
// It keeps state (an Observer): one Learning serves one server
// (ForServer gives each of a scenario's replicas its own). It is safe for
// concurrent use.
type Learning struct {
	cfg    LearningConfig
	mults  []decimal.Decimal // the levels' multipliers, ascending
	prices []Posted          // the base scaled by each
	// unit is the base's price per GPU-second at full use of one GPU,
	// for the prior of a level nothing has started at yet.
	unit float64

	mu  sync.Mutex
	s   learnState
	pcg *rand.PCG
	rng *rand.Rand
}

var (
	_ Policy   = (*Learning)(nil)
	_ Asker    = (*Learning)(nil)
	_ Observer = (*Learning)(nil)
)

// NewLearning checks cfg, fills in its defaults and lays out the grid.
// It posts the level nearest the base price until it first chooses.
func NewLearning(cfg LearningConfig) (*Learning, error) {
	const op = "server.NewLearning"
	if cfg.Floor.IsZero() {
		cfg.Floor = DefaultLearningFloor
	}
	if cfg.Ceiling.IsZero() {
		cfg.Ceiling = DefaultLearningCeiling
	}
	if cfg.Levels == 0 {
		cfg.Levels = DefaultLearningLevels
	}
	if cfg.Epoch == 0 {
		cfg.Epoch = DefaultLearningEpoch
	}
	if cfg.MaxEpoch == 0 {
		cfg.MaxEpoch = cfg.Epoch
	}
	switch {
	case !cfg.Floor.IsPositive() || cfg.Ceiling.GreaterThan(decimal.NewFromInt(MaxLearningMultiplier)):
		return nil, bourse.Errorf(bourse.EInvalid, op, "floor %s and ceiling %s: want multipliers above 0 and at most %d", cfg.Floor, cfg.Ceiling, MaxLearningMultiplier)
	case !cfg.Ceiling.GreaterThan(cfg.Floor):
		return nil, bourse.Errorf(bourse.EInvalid, op, "ceiling %s is not above floor %s", cfg.Ceiling, cfg.Floor)
	case cfg.Levels < 2 || cfg.Levels > MaxLearningLevels:
		return nil, bourse.Errorf(bourse.EInvalid, op, "levels %d: want 2 to %d", cfg.Levels, MaxLearningLevels)
	case cfg.Epoch < time.Second:
		return nil, bourse.Errorf(bourse.EInvalid, op, "epoch %v: want at least a second", cfg.Epoch)
	case cfg.MaxEpoch < cfg.Epoch:
		return nil, bourse.Errorf(bourse.EInvalid, op, "max_epoch %v is below epoch %v: want it at least the epoch, or 0 for epochs that do not grow", cfg.MaxEpoch, cfg.Epoch)
	}
	if err := cfg.Base.Validate(); err != nil {
		return nil, fmt.Errorf("%s: base: %w", op, err)
	}
	unit := topPrice(cfg.Base.P) + topPrice(cfg.Base.Q)
	if unit <= 0 {
		return nil, bourse.Errorf(bourse.EInvalid, op, "the base price is zero: a multiple of nothing learns nothing")
	}
	l := &Learning{cfg: cfg, mults: grid(cfg.Floor, cfg.Ceiling, cfg.Levels), unit: unit}
	for _, m := range l.mults {
		p := cfg.Base
		p.P, p.Q = scaleCurve(cfg.Base.P, m, decimal.NewFromInt(1)), scaleCurve(cfg.Base.Q, m, decimal.NewFromInt(1))
		l.prices = append(l.prices, p)
	}
	l.pcg = rand.NewPCG(cfg.Seed, 0x6c6561726e) // "learn": a stream of its own
	l.rng = rand.New(l.pcg)
	l.s = newLearnState(len(l.mults), nearestOne(l.mults))
	return l, nil
}

// grid is n multipliers from lo to hi, both exact, in geometric steps
// rounded to six places (the steps are a design, not money: the curves
// they scale stay exact decimals).
func grid(lo, hi decimal.Decimal, n int) []decimal.Decimal {
	out := make([]decimal.Decimal, n)
	ratio := hi.InexactFloat64() / lo.InexactFloat64()
	for i := range n {
		switch i {
		case 0:
			out[i] = lo
		case n - 1:
			out[i] = hi
		default:
			m := lo.InexactFloat64() * math.Pow(ratio, float64(i)/float64(n-1))
			out[i] = decimal.NewFromFloat(m).Round(6)
		}
	}
	return out
}

// nearestOne is the level whose multiplier is nearest the base price.
func nearestOne(ms []decimal.Decimal) int {
	best, one := 0, decimal.NewFromInt(1)
	for i, m := range ms {
		if m.Sub(one).Abs().LessThan(ms[best].Sub(one).Abs()) {
			best = i
		}
	}
	return best
}

// topPrice is a curve's highest y, per GPU-second: what the base asks of
// a GPU used in full.
func topPrice(c contract.Curve) float64 {
	if len(c) == 0 {
		return 0
	}
	return c[len(c)-1].Y.InexactFloat64()
}

// fork is a fresh learner of the same configuration for server id, its
// seed mixed from the run's and the id's.
func (l *Learning) fork(id string, seed uint64) *Learning {
	h := fnv.New64a()
	h.Write([]byte(id))
	cfg := l.cfg
	cfg.Seed = seed ^ h.Sum64() ^ l.cfg.Seed*0x9e3779b97f4a7c15
	f, err := NewLearning(cfg)
	if err != nil {
		panic("server: a valid learner's configuration refused: " + err.Error()) // cannot be: it made l
	}
	return f
}

// String names the policy in the server's heartbeats.
func (l *Learning) String() string { return "learning" }

// Validate checks nothing NewLearning has not: a Learning is made valid.
func (l *Learning) Validate() error { return nil }

// Config is the learner's configuration, defaults filled in.
func (l *Learning) Config() LearningConfig { return l.cfg }

// Multipliers are the grid's levels, ascending.
func (l *Learning) Multipliers() []decimal.Decimal { return append([]decimal.Decimal(nil), l.mults...) }

// Current is the posted price of the level posted now.
func (l *Learning) Current() Posted {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prices[l.s.Level]
}

// Decide decides as the posted price of the level posted now.
func (l *Learning) Decide(offer contract.Terms, st View) Decision {
	return l.Current().Decide(offer, st)
}

// Ask asks the posted price of the level posted now: what the exchange
// routes by.
func (l *Learning) Ask(c contract.Class, st View) Asked { return l.Current().Ask(c, st) }
