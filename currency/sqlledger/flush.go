package sqlledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/bourse/bourse/internal/multirow"
)

// The statements of flush. Amounts travel as text.
var (
	insertCurrencies = &multirow.Statement{Head: `INSERT INTO currencies (code, scale) VALUES `, Casts: multirow.Columns(2)}
	insertAccounts   = &multirow.Statement{Head: `INSERT INTO accounts (uid, id, currency, kind, parent, balance, entry_count, created, created_ns) VALUES `,
		Casts: multirow.Columns(9)}
	updateAccounts = &multirow.Statement{Head: `UPDATE accounts SET balance = v.balance, entry_count = v.entry_count FROM (VALUES `,
		Tail:  `) AS v(uid, balance, entry_count) WHERE accounts.uid = v.uid`,
		Casts: []string{"::UUID", "::DECIMAL", "::INT8"}}
	insertHolds = &multirow.Statement{Head: `INSERT INTO holds (uid, id, currency, from_uid, from_account, amount, status, deadline, deadline_ns,
  captured_to, captured, released, created, created_ns, resolved, resolved_ns) VALUES `, Casts: multirow.Columns(16)}
	updateHolds = &multirow.Statement{Head: `UPDATE holds SET status = v.status, captured_to = v.captured_to, captured = v.captured,
  released = v.released, resolved = v.resolved, resolved_ns = v.resolved_ns FROM (VALUES `,
		Tail:  `) AS v(uid, status, captured_to, captured, released, resolved, resolved_ns) WHERE holds.uid = v.uid`,
		Casts: []string{"::UUID", "::TEXT", "::TEXT", "::DECIMAL", "::DECIMAL", "::TIMESTAMPTZ", "::INT4"}}
	insertMovements = &multirow.Statement{Head: `INSERT INTO movements (uid, id, idem_key, currency, from_account, to_account, amount, hold_id, memo,
  posted, posted_ns) VALUES `, Casts: multirow.Columns(11)}
	insertEntries = &multirow.Statement{Head: `INSERT INTO entries (account_uid, seq, movement_uid, amount, balance_after) VALUES `, Casts: multirow.Columns(5)}
	insertResults = &multirow.Statement{Head: `INSERT INTO results (uid, idem_key, fingerprint, result) VALUES `, Casts: multirow.Columns(4)}
)

// flush writes what the transaction changed, and then the statements of
// Tx.Queue, and commits, in one round trip.
func (s *state) flush(ctx context.Context) error {
	b := &pgx.Batch{}
	insertCurrencies.Queue(b.Queue, len(s.currencies), func(args []any, i int) []any {
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
	insertAccounts.Queue(b.Queue, len(added), func(args []any, i int) []any {
		a := added[i]
		created, ns := splitTime(a.Created)
		return append(args, a.uid, string(a.ID), string(a.Currency), string(a.Kind), string(a.Parent), dec(a.balance), a.count, created, ns)
	})
	updateAccounts.Queue(b.Queue, len(changed), func(args []any, i int) []any {
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
	insertHolds.Queue(b.Queue, len(newHolds), func(args []any, i int) []any {
		h := newHolds[i]
		deadline, deadlineNS := splitTime(h.Deadline)
		created, createdNS := splitTime(h.Created)
		resolvedAt, resolvedNS := nullTime(h.Resolved)
		return append(args, holdUID(h.ID), string(h.ID), string(h.Currency), accountUID(h.From), string(h.From),
			dec(h.Amount), string(h.Status), deadline, deadlineNS, string(h.CapturedTo), dec(h.Captured), dec(h.Released),
			created, createdNS, resolvedAt, resolvedNS)
	})
	updateHolds.Queue(b.Queue, len(resolved), func(args []any, i int) []any {
		h := resolved[i]
		resolvedAt, resolvedNS := nullTime(h.Resolved)
		return append(args, holdUID(h.ID), string(h.Status), string(h.CapturedTo), dec(h.Captured), dec(h.Released),
			resolvedAt, resolvedNS)
	})
	insertMovements.Queue(b.Queue, len(s.movements), func(args []any, i int) []any {
		m := s.movements[i]
		at, ns := splitTime(m.At)
		return append(args, movementUID(m.ID), m.ID, m.Key, string(m.Currency), string(m.From), string(m.To),
			dec(m.Amount), string(m.Hold), m.Memo, at, ns)
	})
	insertEntries.Queue(b.Queue, len(s.entries), func(args []any, i int) []any {
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
	insertResults.Queue(b.Queue, len(s.newResults), func(args []any, i int) []any {
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
