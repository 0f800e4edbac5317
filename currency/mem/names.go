package mem

import "time"

// Names remembers names that compaction forgot (idempotency keys, hold
// and contract ids) as 64-bit fingerprints in a map (about 30 bytes a name
// in the heap, measured by TestCompactBoundsMemory, against some 4 KB for
// a contract's ledger records), so that a name used again after its
// record is gone is recognised rather than taken for new.
//
// A fingerprint is FNV-1a of a kind byte and the name. Two names share one
// with a chance of about n²/2⁶⁵ among n names (1 in 40,000 at 30 million):
// then a new name is refused as if it were old, never the reverse.
//
// With a Remember period the fingerprints live in generations: each
// compaction's names go to the newest one, a new generation starts when
// the newest is half that period old, and a generation goes once its last
// compaction is more than that period older than the current one. A name
// is then recognised for at least Remember after the compaction that
// forgot it, and memory stays proportional to what is forgotten in about
// 1.5 periods. Without one (zero) every fingerprint stays.
//
// Names is not safe for concurrent use; its owner locks it.
type Names struct {
	remember time.Duration
	gens     []generation // oldest first
	n        int
}

type generation struct {
	from, to time.Time // the first and last compaction horizons in it
	set      map[uint64]struct{}
}

// NewNames returns an empty set that remembers each name for at least
// remember after it is added (forever if remember is zero).
func NewNames(remember time.Duration) *Names { return &Names{remember: remember} }

// Begin starts a compaction whose horizon is at: names added until the
// next Begin are remembered from at. It drops the generations that are
// past remembering.
func (s *Names) Begin(at time.Time) {
	if s.remember > 0 {
		i := 0
		for i < len(s.gens) && s.gens[i].to.Before(at.Add(-s.remember)) {
			s.n -= len(s.gens[i].set)
			i++
		}
		if i > 0 {
			s.gens = append(s.gens[:0:0], s.gens[i:]...)
		}
	}
	if len(s.gens) == 0 || (s.remember > 0 && s.gens[len(s.gens)-1].from.Before(at.Add(-s.remember/2))) {
		s.gens = append(s.gens, generation{from: at, set: map[uint64]struct{}{}})
	}
	if g := &s.gens[len(s.gens)-1]; g.to.Before(at) {
		g.to = at
	}
}

// Add remembers name of a kind (a byte that keeps kinds of names apart).
// Call Begin first.
func (s *Names) Add(kind byte, name string) {
	g := s.gens[len(s.gens)-1].set
	n := len(g)
	g[fingerprint(kind, name)] = struct{}{}
	s.n += len(g) - n
}

// Has reports whether name of that kind was added and is still remembered
// (or another name has its fingerprint).
func (s *Names) Has(kind byte, name string) bool {
	if s == nil || s.n == 0 {
		return false
	}
	f := fingerprint(kind, name)
	for i := len(s.gens) - 1; i >= 0; i-- {
		if _, ok := s.gens[i].set[f]; ok {
			return true
		}
	}
	return false
}

// Len is how many fingerprints are remembered.
func (s *Names) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}

func fingerprint(kind byte, name string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	h = (h ^ uint64(kind)) * prime
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * prime
	}
	return h
}
