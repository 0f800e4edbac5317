// Package sqlstore keeps the exchange's contracts in the SQL ledger's
// database (PostgreSQL or CockroachDB), so that a contract's change of
// state and the money it moves commit in one transaction: each Open and
// Update is one sqlledger.Ledger.Tx, which writes the contract row and
// applies the ledger operations together, and is retried whole when it
// fails to serialize.
//
// Round trips: Open takes two (the contract's row and the rows of the
// reserve read together, then the writes with COMMIT); an Update that
// moves no money takes two, one that does three (the ledger's rows can
// only be read once the change has said which operations it wants), or
// two where the contract is as this store last wrote it: the change then
// decides before the first round trip, on the contract known (known.go).
// Concurrent calls share their transactions and so their round trips
// (group.go).
//
// The table is in migrations/, applied by Open.
package sqlstore

import (
	"context"
	"embed"
	"errors"
	"io/fs"
	"math"
	"sync/atomic"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/groupcommit"
	"github.com/bourse/bourse/internal/multirow"
	"github.com/bourse/bourse/protocol"
)

var _ exchange.Store = (*Store)(nil)

// scope is the store's name for its migrations in the ledger's database.
const scope = "exchange/sqlstore"

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is an exchange.Store in the database of a sqlledger.Ledger. It is
// safe for concurrent use. Close it before the ledger.
type Store struct {
	l     *sqlledger.Ledger
	group *groupcommit.Loop[*job] // nil where the ledger does not group
	known *known
	// taken counts the Updates decided on the contract known (tests).
	taken atomic.Int64
	// finished counts Finishes, to prune ended locks now and then.
	finished atomic.Int64
	// ctx is the groups' transactions': they belong to no one caller, and
	// end early only if the store closes.
	ctx    context.Context
	cancel context.CancelFunc
}

// Open applies the store's migrations that l's database lacks and returns
// the store. Several processes may open one database at once. The ledger
// stays the caller's to close.
func Open(ctx context.Context, l *sqlledger.Ledger) (*Store, error) {
	fsys, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	if err := l.Migrate(ctx, scope, fsys); err != nil {
		return nil, err
	}
	st := &Store{l: l, known: newKnown(knownMax)}
	st.ctx, st.cancel = context.WithCancel(context.Background())
	if window, size, on := l.GroupCommit(); on {
		st.group = groupcommit.Start(window, size, nil, st.commit)
	}
	return st, nil
}

// Close stops the store's group committer once the group in hand is
// done. The ledger stays the caller's to close.
func (s *Store) Close() {
	s.cancel()
	if s.group != nil {
		s.group.Close()
	}
}

// Ledger returns the ledger the store writes to.
func (s *Store) Ledger() currency.Ledger { return s.l }

// Open escrows and records c in one transaction, shared with other calls
// (group.go). The contract's row (if any), its lock's and the rows of the
// reserves are read in one round trip; if the contract exists, nothing is
// written. A
// single reserve that fails for a business reason leaves its failure under
// its key, as a failed Apply does, and no contract; one of several that
// fails keeps nothing of any.
func (s *Store) Open(ctx context.Context, c contract.Contract, lock string, reserves ...currency.Reserve) (contract.Contract, bool, error) {
	r, err := newRow(c)
	if err != nil {
		return contract.Contract{}, false, err
	}
	o := &openJob{row: r, lock: lock, reserves: reserves}
	if err := s.do(ctx, &job{uid: r.uid, open: o}); err != nil {
		return contract.Contract{}, false, err
	}
	switch {
	case o.old != nil:
		stored, err := o.old.contract(c.ID)
		return stored, false, err
	case o.failed != nil:
		return contract.Contract{}, false, o.failed
	}
	// What was stored is c's record; c is returned as it is, not decoded
	// back from it, as the in-memory store does (decoding was an eighth of
	// the exchange's CPU on this path).
	return c, true, nil
}

// Contract reads one contract.
func (s *Store) Contract(ctx context.Context, id string) (contract.Contract, error) {
	var rec record
	b := &pgx.Batch{}
	queueSelect(b, contractUID(id), false, &rec)
	if err := s.l.Send(ctx, b); err != nil {
		return contract.Contract{}, err
	}
	if rec == nil {
		return contract.Contract{}, currency.NotFound("sqlstore.Contract", "contract "+id)
	}
	return rec.contract(id)
}

// Contracts lists a client's contracts, the latest accepted first; a limit
// of 0 or less means all.
func (s *Store) Contracts(ctx context.Context, client string, limit int) ([]contract.Contract, error) {
	return s.list(ctx, `SELECT id, record FROM contracts WHERE client = $1
ORDER BY accepted_at DESC, accepted_ns DESC, id DESC LIMIT $2`, client, rowLimit(limit))
}

// Between walks the index contracts_accepted_at (migrations/0003).
func (s *Store) Between(ctx context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error) {
	f, fns := splitTime(from)
	u, uns := splitTime(to)
	return s.list(ctx, `SELECT id, record FROM contracts
WHERE (accepted_at, accepted_ns) >= ($1, $2) AND (accepted_at, accepted_ns) < ($3, $4)
  AND ($5 = '' OR (accepted_at, accepted_ns, id) > (SELECT accepted_at, accepted_ns, id FROM contracts WHERE uid = $6))
ORDER BY accepted_at, accepted_ns, id LIMIT $7`, f, fns, u, uns, after, contractUID(after), rowLimit(limit))
}

// Settled walks the partial index contracts_settled_at (migrations/0007),
// by the microsecond: a contract settled in the same microsecond as
// from or to may fall either side, which market data, reading with an
// overlap, does not mind.
func (s *Store) Settled(ctx context.Context, from, to time.Time, after string, limit int) ([]contract.Contract, error) {
	return s.list(ctx, `SELECT id, record FROM contracts
WHERE settled_at IS NOT NULL AND settled_at >= $1 AND settled_at < $2
  AND ($3 = '' OR (settled_at, id) > (SELECT settled_at, id FROM contracts WHERE uid = $4))
ORDER BY settled_at, id LIMIT $5`, from, to, after, contractUID(after), rowLimit(limit))
}

// Stale lists up to limit (0 or less: all) running contracts last seen
// before silentSince or whose stop_by is not after now, and accepted ones
// whose start deadline is before now, skipping those whose retry_at is
// after now: those never stuck first, each group the earliest accepted
// first. Each part is a range of a partial index
// (migrations/0001_contracts.sql, 0006_stop.sql): the query reads and
// sorts the stale contracts, not the table. A running contract both
// silent and stopped comes from the first part alone.
func (s *Store) Stale(ctx context.Context, now, silentSince time.Time, limit int) ([]contract.Contract, error) {
	silent, silentNS := splitTime(silentSince)
	deadline, deadlineNS := splitTime(now)
	return s.list(ctx, `SELECT id, record FROM (
  SELECT id, record, accepted_at, accepted_ns, retry_at FROM contracts
  WHERE state = 'running' AND last_seen <= $1 AND (last_seen < $1 OR last_seen_ns < $2)
    AND (retry_at IS NULL OR retry_at <= $3)
  UNION ALL
  SELECT id, record, accepted_at, accepted_ns, retry_at FROM contracts
  WHERE state = 'running' AND stop_by IS NOT NULL AND stop_by <= $3 AND (stop_by < $3 OR stop_ns <= $4)
    AND NOT (last_seen <= $1 AND (last_seen < $1 OR last_seen_ns < $2))
    AND (retry_at IS NULL OR retry_at <= $3)
  UNION ALL
  SELECT id, record, accepted_at, accepted_ns, retry_at FROM contracts
  WHERE state = 'accepted' AND start_deadline <= $3 AND (start_deadline < $3 OR start_deadline_ns < $4)
    AND (retry_at IS NULL OR retry_at <= $3)
) AS stale
ORDER BY retry_at IS NOT NULL, accepted_at, accepted_ns, id LIMIT $5`, silent, silentNS, deadline, deadlineNS, rowLimit(limit))
}

// Stuck lists the contracts that hold their escrow and failed to settle or
// void, the longest stuck first, from the partial index
// migrations/0002_stuck.sql.
func (s *Store) Stuck(ctx context.Context, limit int) ([]contract.Contract, error) {
	return s.list(ctx, `SELECT id, record FROM contracts WHERE stuck_since IS NOT NULL
ORDER BY stuck_since, id LIMIT $1`, rowLimit(limit))
}

// list reads the contracts of a query that returns id and record.
func (s *Store) list(ctx context.Context, sql string, args ...any) ([]contract.Contract, error) {
	out := []contract.Contract{}
	b := &pgx.Batch{}
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			var rec record
			if err := rows.Scan(&id, &rec); err != nil {
				return err
			}
			c, err := rec.contract(id)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}

func rowLimit(limit int) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return int64(limit)
}

// Update locks the contract's row (SELECT … FOR UPDATE) and calls change
// on a copy; if change returns nil, the changed contract is written and
// ops applied in the same transaction, which other calls may share
// (group.go). An op that fails for a business reason undoes the whole
// Update (its failure is not kept under its key, unlike a failed Apply's)
// and Update returns the stored contract with the op's *bourse.Error.
// change may run more than once, if the transaction must be retried or
// the contract this store wrote last is no longer the row; Update's
// result is its last run's. change runs inside the transaction,
// holding one of the pool's connections and the contract's lock: it
// should decide from the contract alone, not wait on the database or
// anything slow.
func (s *Store) Update(ctx context.Context, id string, change func(c *contract.Contract) ([]currency.Op, error)) (contract.Contract, error) {
	u := &updateJob{id: id, change: change}
	if err := s.do(ctx, &job{uid: contractUID(id), upd: u}); err != nil {
		return contract.Contract{}, err
	}
	if u.changeErr != nil {
		return u.current(s.known), u.changeErr
	}
	return u.next, nil // as stored: its record is what was written
}

// namespace is the UUID namespace of the store's row keys:
// uuid.NewSHA1(uuid.NameSpaceURL, "https://github.com/bourse/bourse/exchange/sqlstore").
// Stored keys depend on it: never change it.
var namespace = uuid.MustParse("1ff18e74-88b4-5f4a-a18d-677ce62af7c7")

// contractUID is the row key of a contract: a version-5 UUID of its id,
// as pgx encodes a UUID natively.
func contractUID(id string) [16]byte {
	return uuid.NewSHA1(namespace, []byte("contract:"+id))
}

// record is a contract as stored: its JSON, written by protocol.Marshal
// (encoding/json's bytes, faster) and read in encoding/json's semantics
// (go-json-experiment's v1), which accept the records of every version.
type record []byte

// stored is what a record may hold: a contract, and the members that
// records of earlier versions wrote in another shape.
type stored struct {
	contract.Contract
	// CapHold is the hold of the client's own GPU cap, which records
	// written before a contract's cap holds were one list kept apart from
	// the others (cap_holds, then its project's and organisation's): it
	// goes first in the list, so that a settlement releases it under the
	// key it always had (caps.Release: cap-release/<contract>).
	CapHold string `json:"cap_hold,omitempty"`
}

// contract decodes the record of contract id.
func (r record) contract(id string) (contract.Contract, error) {
	var s stored
	if err := json.Unmarshal(r, &s); err != nil {
		return contract.Contract{}, &bourse.Error{Code: bourse.EInternal, Op: "sqlstore", Field: "record",
			Message: "stored contract " + id + " is unreadable", Err: err}
	}
	if s.CapHold != "" {
		s.CapHolds = append([]string{s.CapHold}, s.CapHolds...)
	}
	return s.Contract, nil
}

// queueSelect queues the read of a contract's record into *rec, nil if
// there is no such contract; forUpdate locks the row until commit.
func queueSelect(b *pgx.Batch, uid [16]byte, forUpdate bool, rec *record) {
	sql := `SELECT record FROM contracts WHERE uid = $1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	b.Queue(sql, uid).QueryRow(func(row pgx.Row) error {
		var s string
		err := row.Scan(&s)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			*rec = nil
			return nil
		case err != nil:
			return err
		}
		*rec = record(s)
		return nil
	})
}

// row is a contract's row, to write.
type row struct {
	uid    [16]byte
	c      contract.Contract
	record record
}

func newRow(c contract.Contract) (*row, error) {
	// Every Open and Update writes the whole record: encoded without
	// reflection where AppendRecord can (every contract the exchange
	// makes), the same bytes either way.
	if js, ok := c.AppendRecord(make([]byte, 0, 1024)); ok {
		return &row{uid: contractUID(c.ID), c: c, record: js}, nil
	}
	js, err := protocol.Marshal(c)
	if err != nil {
		return nil, &bourse.Error{Code: bourse.EInvalid, Op: "sqlstore", Message: "contract " + c.ID + " cannot be encoded", Err: err}
	}
	return &row{uid: contractUID(c.ID), c: c, record: js}, nil
}

// appendArgs appends the values of the columns, in the order of the
// table.
func (r *row) appendArgs(args []any) []any {
	acceptedAt, acceptedNS := splitTime(r.c.AcceptedAt)
	deadline, deadlineNS := splitTime(r.c.StartDeadline)
	lastSeen, lastSeenNS := splitTime(r.c.LastSeen)
	var stuckSince, retryAt, stopBy, settledAt *time.Time
	var stopNS *int32
	if st := r.c.Stuck; st != nil && r.c.HoldsEscrow() {
		stuckSince, retryAt = &st.Since, &st.Retry
	}
	if st := r.c.Stop; st != nil && r.c.State == contract.StateRunning {
		by, ns := splitTime(st.By)
		stopBy, stopNS = &by, &ns
	}
	if r.c.State == contract.StateSettled {
		settledAt = &r.c.SettledAt
	}
	return append(args, r.uid, r.c.ID, r.c.Client, r.c.Server, string(r.c.State), acceptedAt, acceptedNS,
		deadline, deadlineNS, lastSeen, lastSeenNS, string(r.record), stuckSince, retryAt, stopBy, stopNS, settledAt)
}

// The statements that write a group's contract rows, a few rows each
// (package multirow): a dozen rows in one statement cost PostgreSQL far
// less than a dozen statements.
var (
	insertContracts = &multirow.Statement{Head: `INSERT INTO contracts (uid, id, client, server, state, accepted_at, accepted_ns,
  start_deadline, start_deadline_ns, last_seen, last_seen_ns, record, stuck_since, retry_at, stop_by, stop_ns, settled_at) VALUES `,
		Casts: multirow.Columns(17)}
	updateContracts = &multirow.Statement{Head: `UPDATE contracts SET id = v.id, client = v.client, server = v.server, state = v.state,
  accepted_at = v.accepted_at, accepted_ns = v.accepted_ns, start_deadline = v.start_deadline,
  start_deadline_ns = v.start_deadline_ns, last_seen = v.last_seen, last_seen_ns = v.last_seen_ns,
  record = v.record, stuck_since = v.stuck_since, retry_at = v.retry_at, stop_by = v.stop_by,
  stop_ns = v.stop_ns, settled_at = v.settled_at FROM (VALUES `,
		Tail: `) AS v(uid, id, client, server, state, accepted_at, accepted_ns, start_deadline, start_deadline_ns,
  last_seen, last_seen_ns, record, stuck_since, retry_at, stop_by, stop_ns, settled_at) WHERE contracts.uid = v.uid`,
		Casts: []string{"::UUID", "::TEXT", "::TEXT", "::TEXT", "::TEXT", "::TIMESTAMPTZ", "::INT4", "::TIMESTAMPTZ", "::INT4",
			"::TIMESTAMPTZ", "::INT4", "::TEXT", "::TIMESTAMPTZ", "::TIMESTAMPTZ", "::TIMESTAMPTZ", "::INT4", "::TIMESTAMPTZ"}}
)

// queueWrites queues, to go out with t's commit, the INSERT of the rows
// added and the UPDATE of the rows changed. Each statement checks that it
// wrote all its rows: an INSERT fails on a row that exists, and an UPDATE
// finds the rows the transaction has locked.
func queueWrites(t *sqlledger.Tx, added, changed []*row) {
	insertContracts.Queue(t.Queue, len(added), func(args []any, i int) []any { return added[i].appendArgs(args) })
	updateContracts.Queue(t.Queue, len(changed), func(args []any, i int) []any { return changed[i].appendArgs(args) })
}

// TIMESTAMPTZ keeps microseconds; the nanoseconds below them go to a
// column of their own so that comparisons are exact.
func splitTime(t time.Time) (time.Time, int32) {
	return t.Truncate(time.Microsecond), int32(t.Nanosecond() % 1000)
}
