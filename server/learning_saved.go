package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// learningVersion is the form of a saved learner's state; another is
// refused (and the learner starts afresh) rather than misread.
const learningVersion = 1

// savedLearning is a learner's state on disk, beside the bookings.
type savedLearning struct {
	Version int `json:"version"`
	// Multipliers are the grid it learned on: a grid changed since (the
	// operator's floor, ceiling or levels) makes the counts meaningless.
	Multipliers []decimal.Decimal `json:"multipliers"`
	Level       int               `json:"level"`
	Epochs      int               `json:"epochs"`
	GPUs        int               `json:"gpus"` // the server's, when it was saved
	// RNG is its random stream, so that a restart draws on where it was
	// rather than again from the seed.
	RNG     []byte         `json:"rng"`
	Levels  []levelStats   `json:"levels"`
	Pending map[string]int `json:"pending"`
}

// State is what the learner knows, to save across a restart of its
// server: what Restore takes back.
func (l *Learning) State() ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rng, err := l.pcg.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("learning state: %w", err)
	}
	return json.Marshal(savedLearning{Version: learningVersion, Multipliers: l.mults, Level: l.s.Level, Epochs: l.s.Epochs,
		GPUs: l.s.GPUs, RNG: rng, Levels: l.s.Levels, Pending: l.s.Pending})
}

// Restore takes back a state State saved, before the server decides any
// offer. The time the server was down counts for no level, and a new
// epoch begins at the first tick. A state that is not one (a file of
// another kind, another version, numbers no learner writes) or that was
// learned on another grid is refused with EInvalid, and the learner keeps
// what it had: the driver says so and the learner starts afresh.
func (l *Learning) Restore(data []byte) error {
	const op = "server.Learning.Restore"
	var s savedLearning
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return bourse.Errorf(bourse.EInvalid, op, "not a learner's state: %v", err)
	}
	if dec.More() {
		return bourse.Errorf(bourse.EInvalid, op, "not a learner's state: more after it")
	}
	if s.Version != learningVersion {
		return bourse.Errorf(bourse.EInvalid, op, "state version %d; this server reads %d", s.Version, learningVersion)
	}
	if !slices.EqualFunc(s.Multipliers, l.mults, decimal.Decimal.Equal) {
		return bourse.Errorf(bourse.EInvalid, op, "learned on the grid %v; the policy's is now %v", s.Multipliers, l.mults)
	}
	if err := checkSaved(s, len(l.mults)); err != nil {
		return bourse.Errorf(bourse.EInvalid, op, "%v", err)
	}
	pcg := *l.pcg
	if err := pcg.UnmarshalBinary(s.RNG); err != nil {
		return bourse.Errorf(bourse.EInvalid, op, "its random stream: %v", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	*l.pcg = pcg
	l.s = newLearnState(len(l.mults), s.Level)
	l.s.Epochs, l.s.Levels, l.s.GPUs = s.Epochs, s.Levels, s.GPUs
	maps.Copy(l.s.Pending, s.Pending)
	return nil
}

// checkSaved checks the numbers of a saved state: what no learner writes
// would be believed for ever after.
func checkSaved(s savedLearning, levels int) error {
	switch {
	case len(s.Levels) != levels:
		return fmt.Errorf("%d levels for a grid of %d", len(s.Levels), levels)
	case s.Level < 0 || s.Level >= levels:
		return fmt.Errorf("level %d of %d", s.Level, levels)
	case s.Epochs < 0 || s.GPUs < 0:
		return fmt.Errorf("epochs %d, GPUs %d", s.Epochs, s.GPUs)
	}
	bad := func(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }
	for k, v := range s.Levels {
		if bad(v.Posted) || bad(v.Room) || bad(v.Held) || bad(v.Used) || bad(v.Squares) || v.Room > v.Posted || v.Revenue.IsNegative() ||
			min(v.Offers, v.Accepts, v.Countered, v.CountersTaken, v.Starts, v.Ended) < 0 || v.Ended > v.Starts {
			return fmt.Errorf("level %d: impossible counts", k)
		}
	}
	for c, k := range s.Pending {
		if k < 0 || k >= levels {
			return fmt.Errorf("contract %s at level %d of %d", c, k, levels)
		}
	}
	return nil
}

// Beliefs is what a learner believes, for its operator: the metrics and
// the log of bourse server show it.
type Beliefs struct {
	Level      int
	Multiplier decimal.Decimal
	EpochEnds  time.Time
	Epochs     int
	Levels     []LevelBelief
}

// LevelBelief is what a learner believes of one level. The rates are
// estimates (posterior means), not money owed.
type LevelBelief struct {
	Multiplier decimal.Decimal
	// Posted and Room are the seconds it was posted, and of them those
	// with a free GPU.
	Posted, Room float64
	Starts       int
	Ended        int
	Revenue      decimal.Decimal // what its ended contracts earned
	// StartsPerHour is contracts an hour of room (all GPUs free); were it
	// posted all the time, EarnPerHour is what it would earn an hour and
	// GPUsBusy how many GPUs it would keep busy.
	StartsPerHour, EarnPerHour, GPUsBusy float64
}

// Beliefs says what the learner believes now.
func (l *Learning) Beliefs() Beliefs {
	l.mu.Lock()
	defer l.mu.Unlock()
	hold, price := l.perContract()
	b := Beliefs{Level: l.s.Level, Multiplier: l.mults[l.s.Level], EpochEnds: l.s.EpochEnd, Epochs: l.s.Epochs}
	prior := l.priorRoom()
	gpus := float64(max(l.s.GPUs, 1))
	for k, st := range l.s.Levels {
		rate := (1 + float64(st.Starts)) / (prior + st.Room) // the posterior's mean
		earn, busy := earning(rate, hold[k], price[k], gpus)
		lb := LevelBelief{Multiplier: l.mults[k], Posted: st.Posted, Room: st.Room, Starts: st.Starts, Ended: st.Ended,
			Revenue: st.Revenue, StartsPerHour: 3600 * rate, EarnPerHour: 3600 * earn, GPUsBusy: busy}
		b.Levels = append(b.Levels, lb)
	}
	return b
}
