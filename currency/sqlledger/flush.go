package sqlledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// rows is a statement that writes any number of rows given as a VALUES
// list. Writing n rows takes one statement per power of two in n, at most
// maxChunk rows each: few statements per transaction, and few distinct
// statement texts for pgx and the server to prepare and plan once. (Arrays
// and unnest would make one statement of any n, but PostgreSQL executes
// them several times slower for the one or two rows of most
// transactions.)
type rows struct {
	head, tail string
	casts      []string // a cast for each column's parameter, or ""

	mu    sync.Mutex
	texts map[int]string
}

const maxChunk = 64

func (r *rows) sql(n int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.texts[n]; ok {
		return s
	}
	var b strings.Builder
	b.WriteString(r.head)
	p := 1
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, c := range r.casts {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			b.WriteString(c)
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(r.tail)
	if r.texts == nil {
		r.texts = map[int]string{}
	}
	r.texts[n] = b.String()
	return r.texts[n]
}

// queue queues the statements that write n rows; row appends the
// parameters of row i to args. Each statement must write all its rows.
func (r *rows) queue(b *pgx.Batch, n int, row func(args []any, i int) []any) {
	for i := 0; i < n; {
		chunk := maxChunk
		for chunk > n-i {
			chunk /= 2
		}
		args := make([]any, 0, chunk*len(r.casts))
		for j := range chunk {
			args = row(args, i+j)
		}
		b.Queue(r.sql(chunk), args...).Exec(rowsAffected(chunk))
		i += chunk
	}
}

// rowsAffected checks that a statement wrote the n rows it was given: an
// UPDATE finds the rows that the transaction has locked.
func rowsAffected(n int) func(pgconn.CommandTag) error {
	return func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() != int64(n) {
			return fmt.Errorf("%s wrote %d rows, want %d", ct, ct.RowsAffected(), n)
		}
		return nil
	}
}

func cols(n int) []string { return make([]string, n) }

// The statements of flush. Amounts travel as text.
var (
	insertCurrencies = &rows{head: `INSERT INTO currencies (code, scale) VALUES `, casts: cols(2)}
	insertAccounts   = &rows{head: `INSERT INTO accounts (uid, id, currency, kind, parent, balance, entry_count, created, created_ns) VALUES `,
		casts: cols(9)}
	updateAccounts = &rows{head: `UPDATE accounts SET balance = v.balance, entry_count = v.entry_count FROM (VALUES `,
		tail:  `) AS v(uid, balance, entry_count) WHERE accounts.uid = v.uid`,
		casts: []string{"::UUID", "::DECIMAL", "::INT8"}}
	insertHolds = &rows{head: `INSERT INTO holds (uid, id, currency, from_uid, from_account, amount, status, deadline, deadline_ns,
  captured_to, captured, released, created, created_ns, resolved, resolved_ns) VALUES `, casts: cols(16)}
	updateHolds = &rows{head: `UPDATE holds SET status = v.status, captured_to = v.captured_to, captured = v.captured,
  released = v.released, resolved = v.resolved, resolved_ns = v.resolved_ns FROM (VALUES `,
		tail:  `) AS v(uid, status, captured_to, captured, released, resolved, resolved_ns) WHERE holds.uid = v.uid`,
		casts: []string{"::UUID", "::TEXT", "::TEXT", "::DECIMAL", "::DECIMAL", "::TIMESTAMPTZ", "::INT4"}}
	insertMovements = &rows{head: `INSERT INTO movements (uid, id, idem_key, currency, from_account, to_account, amount, hold_id, memo,
  posted, posted_ns) VALUES `, casts: cols(11)}
	insertEntries = &rows{head: `INSERT INTO entries (account_uid, seq, movement_uid, amount, balance_after) VALUES `, casts: cols(5)}
	insertResults = &rows{head: `INSERT INTO results (uid, idem_key, fingerprint, result) VALUES `, casts: cols(4)}
)

// flush writes what the transaction changed, and then the statements of
// Tx.Queue, and commits, in one round trip.
func (s *state) flush(ctx context.Context) error {
	b := &pgx.Batch{}
	insertCurrencies.queue(b, len(s.currencies), func(args []any, i int) []any {
		c := s.currencies[i]
		return append(args, string(c.Code), c.Scale)
	})
	var added, changed []*accountRow
	for _, a := range s.dirty {
		if a.isNew {
			added = append(added, a)
		} else {
			changed = append(changed, a)
		}
	}
	insertAccounts.queue(b, len(added), func(args []any, i int) []any {
		a := added[i]
		created, ns := splitTime(a.Created)
		return append(args, a.uid, string(a.ID), string(a.Currency), string(a.Kind), string(a.Parent), dec(a.balance), a.count, created, ns)
	})
	updateAccounts.queue(b, len(changed), func(args []any, i int) []any {
		a := changed[i]
		return append(args, a.uid, dec(a.balance), a.count)
	})
	var newHolds, resolved []*holdRow
	for _, h := range s.dirtyHolds {
		if h.isNew {
			newHolds = append(newHolds, h)
		} else {
			resolved = append(resolved, h)
		}
	}
	insertHolds.queue(b, len(newHolds), func(args []any, i int) []any {
		h := newHolds[i]
		deadline, deadlineNS := splitTime(h.Deadline)
		created, createdNS := splitTime(h.Created)
		resolvedAt, resolvedNS := nullTime(h.Resolved)
		return append(args, holdUID(h.ID), string(h.ID), string(h.Currency), accountUID(h.From), string(h.From),
			dec(h.Amount), string(h.Status), deadline, deadlineNS, string(h.CapturedTo), dec(h.Captured), dec(h.Released),
			created, createdNS, resolvedAt, resolvedNS)
	})
	updateHolds.queue(b, len(resolved), func(args []any, i int) []any {
		h := resolved[i]
		resolvedAt, resolvedNS := nullTime(h.Resolved)
		return append(args, holdUID(h.ID), string(h.Status), string(h.CapturedTo), dec(h.Captured), dec(h.Released),
			resolvedAt, resolvedNS)
	})
	insertMovements.queue(b, len(s.movements), func(args []any, i int) []any {
		m := s.movements[i]
		at, ns := splitTime(m.At)
		return append(args, movementUID(m.ID), m.ID, m.Key, string(m.Currency), string(m.From), string(m.To),
			dec(m.Amount), string(m.Hold), m.Memo, at, ns)
	})
	insertEntries.queue(b, len(s.entries), func(args []any, i int) []any {
		e := s.entries[i]
		return append(args, e.account, e.seq, e.movement, dec(e.amount), dec(e.balance))
	})
	results := make([]string, len(s.newResults))
	for i, r := range s.newResults {
		js, err := json.Marshal(r.r)
		if err != nil {
			return fmt.Errorf("result of key %q: %w", r.r.Key, err)
		}
		results[i] = string(js)
	}
	insertResults.queue(b, len(s.newResults), func(args []any, i int) []any {
		r := s.newResults[i]
		return append(args, resultUID(r.r.Key), r.r.Key, r.fingerprint, results[i])
	})
	b.QueuedQueries = append(b.QueuedQueries, s.queued...)
	return s.t.commit(ctx, b)
}

func nullTime(t time.Time) (pgtype.Timestamptz, int32) {
	if t.IsZero() {
		return pgtype.Timestamptz{}, 0
	}
	at, ns := splitTime(t)
	return pgtype.Timestamptz{Time: at, Valid: true}, ns
}
