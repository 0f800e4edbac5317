package mem

import (
	"container/heap"
	"strings"
	"time"

	"github.com/bourse/bourse/currency"
)

// dueIndex orders open holds by deadline, then id, so that DueHolds looks
// only at the holds that are due instead of every hold ever made: the
// sweep asks every second, and a long simulation makes millions of holds.
//
// Entries are dropped lazily: a hold that closed, or that a rolled-back
// transaction never made, leaves its entry until it reaches the top,
// where DueHolds checks it against the holds map. The invariant is that
// every open hold has an entry for its current deadline (PutHold adds one
// whenever a hold opens or an open hold's deadline changes; an undo only
// restores a state whose entries are still there, since nothing pops
// entries in the middle of a transaction). Duplicates are possible (a
// hold made, rolled back, and made again) and are skipped.
type dueIndex []dueEntry

type dueEntry struct {
	deadline time.Time
	id       currency.HoldID
}

func (e dueEntry) less(f dueEntry) bool {
	if c := e.deadline.Compare(f.deadline); c != 0 {
		return c < 0
	}
	return strings.Compare(string(e.id), string(f.id)) < 0
}

func (q dueIndex) Len() int           { return len(q) }
func (q dueIndex) Less(i, j int) bool { return q[i].less(q[j]) }
func (q dueIndex) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueIndex) Push(x any)        { *q = append(*q, x.(dueEntry)) }
func (q *dueIndex) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = dueEntry{}
	*q = old[:len(old)-1]
	return e
}

// opened records that hold h is open (again, or with a new deadline).
// l.mu is held.
func (l *Ledger) opened(h currency.Hold) {
	heap.Push(&l.due, dueEntry{deadline: h.Deadline, id: h.ID})
}

// dueHolds returns up to limit (all if limit ≤ 0) open holds whose
// deadline is not after now, the earliest first, then by id. l.mu is held.
func (l *Ledger) dueHolds(now time.Time, limit int) []currency.Hold {
	var (
		due  []currency.Hold
		keep []dueEntry
		last dueEntry
	)
	for len(l.due) > 0 && (limit <= 0 || len(due) < limit) {
		top := l.due[0]
		if now.Before(top.deadline) {
			break
		}
		heap.Pop(&l.due)
		h, ok := l.holds[top.id]
		if !ok || h.Status != currency.HoldOpen || !h.Deadline.Equal(top.deadline) ||
			(len(keep) > 0 && last.id == top.id && last.deadline.Equal(top.deadline)) {
			continue // closed, never made, moved, or a duplicate: drop it
		}
		due, keep, last = append(due, h), append(keep, top), top
	}
	for _, e := range keep {
		heap.Push(&l.due, e)
	}
	return due
}
