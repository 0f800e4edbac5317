package server

import (
	"math"
	"time"

	"github.com/shopspring/decimal"
)

// learnState is what a Learning knows: the level posted, and per level
// what happened while it was posted. A contract counts for the level
// posted when it started.
type learnState struct {
	Level    int
	Epochs   int       // epochs chosen so far: the state's generation
	EpochEnd time.Time // when the next is chosen; zero: at the next tick
	// Last is when the time was last counted, Room the share of the
	// server's GPUs free since then, GPUs how many it has.
	Last time.Time
	Room float64
	GPUs int

	Levels  []levelStats
	Pending map[string]int // contracts running, by the level they started at
	// Sweep is the order the first epochs post each level in.
	Sweep []int
}

// levelStats is what happened while one level was posted.
type levelStats struct {
	Posted float64 `json:"posted_s"` // seconds posted
	// Room is the seconds posted weighted by the share of GPUs free:
	// a second with half the GPUs free is half a second of room.
	Room float64 `json:"room_s"`
	// Offers decided, accepted, countered, and counter-offers of the
	// server's taken; for the operator: routing makes them no measure of
	// demand.
	Offers        int `json:"offers"`
	Accepts       int `json:"accepts"`
	Countered     int `json:"countered"`
	CountersTaken int `json:"counters_taken"`
	// Starts are contracts started; Ended those of them ended, which
	// earned Revenue and held Held GPU-seconds (GPUs × T), of which they
	// used Used (U).
	Starts  int             `json:"starts"`
	Ended   int             `json:"ended"`
	Revenue decimal.Decimal `json:"revenue"`
	Held    float64         `json:"held_gpu_s"`
	Used    float64         `json:"used_gpu_s"`
	// Squares is the sum of the squares of their earnings, for how far
	// one contract's earnings stray from another's.
	Squares float64 `json:"squares"`
}

func newLearnState(levels, level int) learnState {
	return learnState{Level: level, Levels: make([]levelStats, levels), Pending: map[string]int{}}
}

// Observe counts an outcome for the level posted, and on a tick at the
// epoch's end chooses the next level; it reports whether the ask changed.
func (l *Learning) Observe(o Outcome) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := &l.s
	l.count(o.Now)
	s.GPUs = o.GPUs
	if o.GPUs > 0 {
		s.Room = float64(o.Free) / float64(o.GPUs)
	}
	lv := &s.Levels[s.Level]
	switch o.Kind {
	case OutcomeOffer:
		lv.Offers++
		if o.Accepted {
			lv.Accepts++
			if o.Counter {
				lv.CountersTaken++
			}
		} else if o.Countered > 0 {
			lv.Countered++
		}
	case OutcomeStart:
		lv.Starts++
		s.Pending[o.Contract] = s.Level
	case OutcomeEnd:
		k, ok := s.Pending[o.Contract]
		if !ok {
			return false // started before the learner knew it (a restart lost it)
		}
		delete(s.Pending, o.Contract)
		e := &s.Levels[k]
		e.Ended++
		e.Revenue = e.Revenue.Add(o.Charge)
		e.Held += float64(o.Terms.GPUs) * o.Usage.T.Seconds()
		e.Used += o.Usage.U.InexactFloat64()
		c := o.Charge.InexactFloat64()
		e.Squares += c * c
	case OutcomeTime:
		if s.EpochEnd.IsZero() || !o.Now.Before(s.EpochEnd) {
			was := s.Level
			s.Level = l.choose()
			s.Epochs++
			s.EpochEnd = o.Now.Add(l.epochLength())
			return s.Level != was
		}
	}
	return false
}

// epochLength is how long the epoch just chosen lasts: Epoch during the
// sweep and the sweep's length again after it, then Epoch×√(k/levels)
// for the k-th epoch after the sweep, up to MaxEpoch. It depends on the
// epochs counted alone, so a restored learner keeps its schedule. l.mu
// is held.
func (l *Learning) epochLength() time.Duration {
	n := len(l.mults)
	k := l.s.Epochs - n
	if l.cfg.MaxEpoch <= l.cfg.Epoch || k <= n {
		return l.cfg.Epoch
	}
	d := time.Duration(float64(l.cfg.Epoch) * math.Sqrt(float64(k)/float64(n)))
	return min(max(d, l.cfg.Epoch), l.cfg.MaxEpoch)
}

// count adds the time since the last outcome to the level posted: all of
// it to Posted, and to Room in the share of GPUs that were free. l.mu is
// held.
func (l *Learning) count(now time.Time) {
	s := &l.s
	if !s.Last.IsZero() && now.After(s.Last) {
		dt := now.Sub(s.Last).Seconds()
		s.Levels[s.Level].Posted += dt
		s.Levels[s.Level].Room += dt * s.Room
	}
	if now.After(s.Last) {
		s.Last = now
	}
}

// Next is when the epoch ends: the node's Wake counts it, so that the
// next level is chosen then, whatever else happens. Before the first
// epoch it is the time of the first outcome, zero until there is one.
func (l *Learning) Next() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.s.EpochEnd.IsZero() {
		return l.s.Last // the first epoch begins as soon as anything happens
	}
	return l.s.EpochEnd
}

// Epochs counts the levels chosen so far: it changes when the state is
// worth saving again.
func (l *Learning) Epochs() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.Epochs
}
