package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/groupcommit"
)

// Group commit: concurrent Open and Update calls share transactions, as
// the ledger's Apply calls do (package internal/groupcommit), whenever
// the ledger groups its own. A group takes the round trips of one call:
//
//  1. the rows of every contract of the group, read and locked in one
//     statement in key order, with the rows every Open's reserves need
//     and those of the operations that each Update's change wants of its
//     contract as this store last wrote it (known.go);
//  2. each Update whose row is not byte for byte that record decides on
//     the row, and the rows of all their operations are read in one
//     batch (none if no such Update moves money);
//  3. each call's operations are applied in memory in the order the calls
//     came, and everything is written with COMMIT.
//
// A call whose operations fail for a business reason (a reserve beyond
// the wallet, a hold resolved already) is undone in memory (Tx.Undo) and
// fails alone; the others commit. Settlements that credit one server's
// revenue account meet in memory instead of queueing on its row lock.
// Two calls on one contract are never in one transaction: the later one
// waits for the next. If a group's transaction fails for good, each of its
// calls is tried again in a transaction of its own, so that one call's
// failure is its alone.

// job is one Open or Update call.
type job struct {
	uid  [16]byte
	open *openJob
	upd  *updateJob
}

type openJob struct {
	row      *row
	lock     string // the token that must hold the id's lock, if any
	reserves []currency.Reserve
	// Results.
	old     record // the contract found, if it existed
	failed  error  // a reserve's business failure
	written bool   // the row is to be inserted
}

type updateJob struct {
	id     string
	change func(c *contract.Contract) ([]currency.Op, error)
	// The decision taken on the contract known (known.go), if any, and
	// the record it stands on.
	guess   *decision
	guessOn record
	// Results.
	found record // as read, nil if there is no such contract
	decision
	row *row // to write, if the Update stands
}

// decision is what a change made of a contract: the contract changed,
// the operations it wants, or its error (or, later, an op's business
// failure).
type decision struct {
	next      contract.Contract
	ops       []currency.Op
	changeErr error
}

// current is the contract as it was before the Update, for a failed one
// (ErrNoChange, mostly): the contract known where its row is the record
// known (a clone, not the record decoded again: at 16 clients this
// decoding was a third of the records the store decoded), else the row
// decoded, only then, as most Updates succeed.
func (u *updateJob) current(k *known) contract.Contract {
	if u.found == nil {
		return contract.Contract{}
	}
	if rec, c, ok := k.get(contractUID(u.id)); ok && bytes.Equal(rec, u.found) {
		return c
	}
	c, _ := u.found.contract(u.id) // decoded once already: it reads
	return c
}

// reset clears what a run of the group set, before it runs again.
func (j *job) reset() {
	if j.open != nil {
		j.open.old, j.open.failed, j.open.written = nil, nil, false
	}
	if u := j.upd; u != nil {
		u.guess, u.guessOn, u.found, u.decision, u.row = nil, nil, nil, decision{}, nil
	}
}

// do runs j in a group, or alone where the ledger does not group.
func (s *Store) do(ctx context.Context, j *job) error {
	if s.group == nil {
		return s.runAlone(ctx, j)
	}
	_, err := s.group.Do(ctx, j)
	if errors.Is(err, groupcommit.ErrClosed) {
		return &bourse.Error{Code: bourse.EUnavailable, Op: "sqlstore", Message: "store closed", Err: err}
	}
	return err
}

// commit runs a group (the committer's function) and answers its calls.
func (s *Store) commit(group []*groupcommit.Call[*job]) {
	// One call a contract per transaction; the others go in the next.
	var now, later []*groupcommit.Call[*job]
	seen := make(map[[16]byte]bool, len(group))
	for _, c := range group {
		if seen[c.Req.uid] {
			later = append(later, c)
			continue
		}
		seen[c.Req.uid] = true
		now = append(now, c)
	}
	jobs := make([]*job, len(now))
	for i, c := range now {
		jobs[i] = c.Req
	}
	err := s.run(s.ctx, jobs)
	switch {
	case err == nil:
		for _, c := range now {
			c.Finish(nil)
		}
	case len(now) == 1 || s.ctx.Err() != nil:
		// One call's error is its own; and a store closing mid-group
		// tries nothing more (the callers retry with the same keys).
		for _, c := range now {
			c.Finish(err)
		}
	default:
		for _, c := range now {
			c.Finish(s.runAlone(c.Ctx, c.Req))
		}
	}
	if len(later) > 0 {
		s.commit(later)
	}
}

// lockTimeout bounds a group's wait for a row another transaction holds.
// A group locks its rows in two batches: the contracts' (with the ledger
// rows their changes are expected to need), then the ledger rows of the
// changes that were not as expected, such as a contract another instance
// changed since this one last wrote it. Each batch locks in key order, but
// two instances' groups can each hold in their first batch a row that the
// other's second wants: a deadlock, which PostgreSQL finds only after its
// deadlock_timeout (1 s by default), while each instance's committer, and
// every offer and reading waiting on it, stands still.
// BenchmarkInstances met 15 in 5,000 contracts with two instances and 58
// with three, which cut the rate to a quarter and a tenth of one
// instance's. With the wait bounded the group fails with lock_not_available
// (55P03) and the ledger runs it again after its usual backoff. CockroachDB
// finds deadlocks at once, and is left as it is.
const lockTimeout = `SET LOCAL lock_timeout = '100ms'`

func (s *Store) runAlone(ctx context.Context, j *job) error {
	return s.run(ctx, []*job{j})
}

// run runs jobs in one transaction, with the ledger's retries. Its error
// is the transaction's; each job's own outcome is in the job. Once it
// commits, the rows written are known (known.go).
func (s *Store) run(ctx context.Context, jobs []*job) error {
	err := s.l.Tx(ctx, func(ctx context.Context, t *sqlledger.Tx) error {
		for _, j := range jobs {
			j.reset()
		}
		// 1. Every contract's row, locked, with the rows of the
		// reserves and of the operations the Updates want of the
		// contracts as known.
		uids := make([][16]byte, len(jobs))
		var first []currency.Op
		for i, j := range jobs {
			uids[i] = j.uid
			if j.open != nil {
				for _, rv := range j.open.reserves {
					first = append(first, rv)
				}
			}
			if u := j.upd; u != nil {
				if rec, c, ok := s.known.get(j.uid); ok {
					u.guess = &decision{next: c}
					u.guess.ops, u.guess.changeErr = u.decideOn(&u.guess.next)
					u.guessOn = rec
					first = append(first, u.guess.ops...)
				}
			}
		}
		found := make(map[[16]byte]record, len(jobs))
		holders := map[string]string{}
		b := &pgx.Batch{}
		if !s.l.CockroachDB() {
			b.Queue(lockTimeout)
		}
		var locked []string
		for _, j := range jobs {
			if j.open != nil {
				locked = append(locked, j.open.row.c.ID)
			}
		}
		if len(locked) > 0 {
			queueLocks(b, locked, holders)
		}
		booked := queueBooked(b, jobs)
		b.Queue(`SELECT uid, record FROM contracts WHERE uid = ANY($1::UUID[]) ORDER BY uid FOR UPDATE`, uids).
			Query(func(rows pgx.Rows) error {
				for rows.Next() {
					var uid [16]byte
					var rec string
					if err := rows.Scan(&uid, &rec); err != nil {
						return err
					}
					found[uid] = record(rec)
				}
				return rows.Err()
			})
		if err := t.Send(ctx, b, first...); err != nil {
			return err
		}
		// 2. The changes decide, where the row is not as known; their
		// operations' rows in one batch.
		var ops []currency.Op
		for _, j := range jobs {
			u := j.upd
			if u == nil {
				continue
			}
			rec := found[j.uid]
			if u.guess != nil && rec != nil && bytes.Equal(rec, u.guessOn) {
				u.found, u.decision = rec, *u.guess
				s.taken.Add(1)
				continue
			}
			u.decide(rec)
			ops = append(ops, u.ops...)
		}
		if len(ops) > 0 {
			if err := t.Send(ctx, nil, ops...); err != nil {
				return err
			}
		}
		// 3. Each call applied, or undone alone; the contract rows of
		// those that stand written together.
		var added, changed []*row
		for _, j := range jobs {
			var err error
			switch {
			case j.open != nil:
				err = j.open.apply(ctx, t, found[j.uid], holders, booked)
			case j.upd.changeErr == nil:
				err = j.upd.apply(ctx, t)
			}
			if err != nil {
				return err
			}
			switch r := j.written(); {
			case r == nil:
			case j.open != nil:
				added = append(added, r)
			default:
				changed = append(changed, r)
			}
		}
		queueWrites(t, added, changed)
		queueUnbook(t, added)
		// A contract made, or found, ends its id's lock.
		var ended []string
		for _, j := range jobs {
			if o := j.open; o != nil && (o.written || o.old != nil) {
				if _, ok := holders[o.row.c.ID]; ok {
					ended = append(ended, o.row.c.ID)
				}
			}
		}
		if len(ended) > 0 {
			t.Queue(`DELETE FROM offer_claims WHERE id = ANY($1)`, ended)
		}
		return nil
	})
	if err == nil {
		s.remember(jobs)
	}
	return err
}

// remember notes the rows that jobs wrote, now committed.
func (s *Store) remember(jobs []*job) {
	for _, j := range jobs {
		if r := j.written(); r != nil {
			s.known.put(j.uid, r.record, &r.c)
		}
	}
}

// written is the row that j's run writes, nil if none: an Open's that
// made its contract, an Update's that stands.
func (j *job) written() *row {
	switch {
	case j.open != nil && j.open.written:
		return j.open.row
	case j.upd != nil && j.upd.changeErr == nil:
		return j.upd.row
	}
	return nil
}

// apply escrows an Open's contract and marks its row for run to write,
// unless it exists. A single reserve that fails keeps its failure under
// its key, as a failed Apply does; one of several that fails takes the
// others back with it.
func (o *openJob) apply(ctx context.Context, t *sqlledger.Tx, old record, holders map[string]string, booked map[string]bool) error {
	if old != nil {
		o.old = old // a retry: nothing to write
		return nil
	}
	if o.lock != "" && holders[o.row.c.ID] != o.lock {
		o.failed = lockTaken()
		return nil
	}
	if c := o.row.c; !c.QueuedAt.IsZero() && !booked[c.ID] {
		o.failed = &bourse.Error{Code: bourse.EConflict, Op: "sqlstore.Open", Field: "id", Message: exchange.LeftMeanwhile(c.ID)}
		return nil
	}
	ops := make([]currency.Op, len(o.reserves))
	for i, rv := range o.reserves {
		ops[i] = rv
	}
	m := t.Mark()
	rs, err := t.Apply(ctx, ops...)
	if err != nil {
		return err
	}
	for _, res := range rs {
		if res.Err == nil {
			continue
		}
		o.failed = res.Err
		if len(rs) > 1 {
			t.Undo(m) // the reserves that went through go back too
		}
		return nil
	}
	o.written = true
	return nil
}

// decide runs the change on the contract's record (nil if there is no
// such contract), setting the operations it wants, or changeErr.
func (u *updateJob) decide(rec record) {
	u.found = rec
	if rec == nil {
		u.changeErr = currency.NotFound("sqlstore.Update", "contract "+u.id)
		return
	}
	var err error
	if u.next, err = rec.contract(u.id); err != nil {
		u.changeErr = err
		return
	}
	u.ops, u.changeErr = u.decideOn(&u.next)
}

// decideOn runs the change on c.
func (u *updateJob) decideOn(c *contract.Contract) ([]currency.Op, error) {
	ops, err := u.change(c)
	if err == nil && c.ID != u.id {
		err = &bourse.Error{Code: bourse.EInternal, Op: "sqlstore.Update", Field: "id",
			Message: fmt.Sprintf("change renamed contract %s to %s", u.id, c.ID)}
	}
	return ops, err
}

// apply applies an Update's operations and makes its contract's row, for
// run to write; if an operation fails, nothing of the Update is kept and
// changeErr says why.
func (u *updateJob) apply(ctx context.Context, t *sqlledger.Tx) error {
	m := t.Mark()
	if len(u.ops) > 0 {
		rs, err := t.Apply(ctx, u.ops...)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if r.Err != nil {
				u.changeErr = r.Err
				t.Undo(m)
				return nil
			}
		}
	}
	r, err := newRow(u.next)
	if err != nil {
		u.changeErr = err
		t.Undo(m)
		return nil
	}
	u.row = r
	return nil
}
