package sqlledger

// Marks: a transaction that serves several callers at once (a group of the
// exchange store's calls) applies each caller's operations after the
// others', and a caller whose operations fail must leave nothing of them
// in the transaction while the others' stay. Tx.Mark notes where the
// transaction's writes stand; Tx.Undo takes every write since back out
// of memory, before any of it has reached the database (writes wait for
// the commit). Rows read since stay read: they are the database's, and
// stay locked.

// Mark is a point in a transaction's writes to undo back to.
type Mark struct {
	journal                                                            int
	currencies, dirty, dirtyHolds, movements, entries, results, queued int
}

// Mark returns the transaction's writes' present point, and from now on
// keeps what Undo needs to come back to it.
func (t *Tx) Mark() Mark {
	s := t.s
	s.journaling = true
	return Mark{journal: len(s.journal), currencies: len(s.currencies), dirty: len(s.dirty),
		dirtyHolds: len(s.dirtyHolds), movements: len(s.movements), entries: len(s.entries),
		results: len(s.newResults), queued: len(s.queued)}
}

// Undo takes back every write of the transaction since m: the ledger's
// operations applied (their results included) and the statements queued.
func (t *Tx) Undo(m Mark) {
	s := t.s
	for i := len(s.journal) - 1; i >= m.journal; i-- {
		s.journal[i]()
	}
	s.journal = s.journal[:m.journal]
	s.currencies = s.currencies[:m.currencies]
	s.dirty = s.dirty[:m.dirty]
	s.dirtyHolds = s.dirtyHolds[:m.dirtyHolds]
	s.movements = s.movements[:m.movements]
	s.entries = s.entries[:m.entries]
	s.newResults = s.newResults[:m.results]
	s.queued = s.queued[:m.queued]
}

// remember journals how to put back what a write is about to change, if
// a mark has been taken.
func (s *state) remember(undo func()) {
	if s.journaling {
		s.journal = append(s.journal, undo)
	}
}

func (s *state) rememberAccount(a *accountRow) {
	if s.journaling {
		old := *a
		s.journal = append(s.journal, func() { *a = old })
	}
}

// rememberKey journals a map entry's presence and value.
func rememberKey[K comparable, V any](s *state, m map[K]V, k K) {
	if !s.journaling {
		return
	}
	old, had := m[k]
	s.journal = append(s.journal, func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}
