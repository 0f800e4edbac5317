package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	json "github.com/go-json-experiment/json/v1"
	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

// Queue reads what it must decide on in one round trip (the lock, whether
// the contract or the waiting offer exists, the counts the limits bound,
// the last waiting offer of the currency that a full book would let w
// outbid) and writes with COMMIT, in one SERIALIZABLE transaction: two
// Queues that would together pass a limit cannot both commit.
func (s *Store) Queue(ctx context.Context, w contract.Waiting, lock string, limits exchange.BookLimits) (exchange.Queued, error) {
	w.Ahead, w.Left = 0, ""
	rec, err := protocol.Marshal(w)
	if err != nil {
		return exchange.Queued{}, &bourse.Error{Code: bourse.EInvalid, Op: "sqlstore.Queue", Message: "waiting offer " + w.ID + " cannot be encoded", Err: err}
	}
	var old *string
	var outbid *contract.Waiting
	queued, queuedNS := splitTime(w.QueuedAt)
	err = s.l.Tx(ctx, func(ctx context.Context, t *sqlledger.Tx) error {
		old, outbid, w.Ahead = nil, nil, 0
		var holder, lastRec *string
		var exists bool
		var mine, all int
		b := &pgx.Batch{}
		b.Queue(`SELECT holder FROM offer_claims WHERE id = $1 FOR UPDATE`, w.ID).QueryRow(func(row pgx.Row) error {
			return noRows(row.Scan(&holder))
		})
		b.Queue(`SELECT EXISTS (SELECT 1 FROM contracts WHERE uid = $1)`, contractUID(w.ID)).QueryRow(func(row pgx.Row) error {
			return row.Scan(&exists)
		})
		b.Queue(`SELECT record FROM book WHERE id = $1`, w.ID).QueryRow(func(row pgx.Row) error {
			return noRows(row.Scan(&old))
		})
		b.Queue(`SELECT count(*) FILTER (WHERE client = $1), count(*) FROM book`, w.Client).QueryRow(func(row pgx.Row) error {
			return row.Scan(&mine, &all)
		})
		b.Queue(`SELECT count(*) FROM book WHERE currency = $1
  AND (price > $2 OR (price = $2 AND (queued_at, queued_ns, id) < ($3, $4, $5)))`, w.Terms.Currency, w.Price.String(), queued, queuedNS, w.ID).
			QueryRow(func(row pgx.Row) error { return row.Scan(&w.Ahead) })
		if limits.Total > 0 {
			// The last in book order: the index book_order read backwards.
			b.Queue(`SELECT record FROM book WHERE currency = $1 ORDER BY price, queued_at DESC, queued_ns DESC, id DESC LIMIT 1`, w.Terms.Currency).
				QueryRow(func(row pgx.Row) error { return noRows(row.Scan(&lastRec)) })
		}
		if err := t.Send(ctx, b); err != nil {
			return err
		}
		switch {
		case old != nil:
			return nil
		case lock != "" && (holder == nil || *holder != lock):
			return lockTaken()
		case exists:
			return exchange.ContractExists(w.ID)
		}
		var last *contract.Waiting
		if lastRec != nil {
			l, err := waitingOf(*lastRec)
			if err != nil {
				return err
			}
			last = &l
		}
		out, err := exchange.CheckBookLimits(limits, mine, all, w, last)
		if err != nil {
			return err
		}
		if out {
			t.Queue(`DELETE FROM book WHERE id = $1`, last.ID)
			outbid = last
		}
		t.Queue(`INSERT INTO book (id, client, currency, price, queued_at, queued_ns, until_at, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
			w.ID, w.Client, w.Terms.Currency, w.Price.String(), queued, queuedNS, w.Until, string(rec))
		return nil
	})
	if err != nil {
		return exchange.Queued{}, err
	}
	if old != nil {
		stored, err := s.Waiting(ctx, w.ID)
		return exchange.Queued{Waiting: stored}, err
	}
	return exchange.Queued{Waiting: w, Created: true, Outbid: outbid}, nil
}

// noRows makes "no row" no error: the value scanned stays as it was.
func noRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// Waiting reads the waiting offer and counts those before it in one round
// trip.
func (s *Store) Waiting(ctx context.Context, id string) (contract.Waiting, error) {
	var rec *string
	var ahead int
	b := &pgx.Batch{}
	b.Queue(`SELECT record FROM book WHERE id = $1`, id).QueryRow(func(row pgx.Row) error { return noRows(row.Scan(&rec)) })
	b.Queue(`SELECT count(*) FROM book o, book w WHERE w.id = $1 AND o.currency = w.currency
  AND (o.price > w.price OR (o.price = w.price AND ((o.queued_at, o.queued_ns, o.id) < (w.queued_at, w.queued_ns, w.id))))`, id).
		QueryRow(func(row pgx.Row) error { return row.Scan(&ahead) })
	if err := s.l.Send(ctx, b); err != nil {
		return contract.Waiting{}, err
	}
	if rec == nil {
		return contract.Waiting{}, currency.NotFound("sqlstore.Waiting", "waiting offer "+id)
	}
	w, err := waitingOf(*rec)
	w.Ahead = ahead
	return w, err
}

func waitingOf(rec string) (contract.Waiting, error) {
	var w contract.Waiting
	if err := json.Unmarshal([]byte(rec), &w); err != nil {
		return contract.Waiting{}, &bourse.Error{Code: bourse.EInternal, Op: "sqlstore", Field: "record", Message: "a stored waiting offer is unreadable", Err: err}
	}
	return w, nil
}

// Book reads the rows in book order: for one currency along the index
// book_order; the whole book, or a client's, is bounded by the book's
// limits. The statement names only the conditions q sets, one of sixteen
// texts, each prepared once: a condition written to hold for every
// parameter ("$1 = ” OR currency = $1") costs PostgreSQL tens of
// milliseconds to plan on every call.
func (s *Store) Book(ctx context.Context, q exchange.BookQuery) ([]contract.Waiting, error) {
	var where []string
	var args []any
	cond := func(sql string, arg any) {
		args = append(args, arg)
		where = append(where, fmt.Sprintf(sql, len(args)))
	}
	if q.Currency != "" {
		cond("currency = $%d", q.Currency)
	}
	if q.Client != "" {
		cond("client = $%d", q.Client)
	}
	if !q.DueBy.IsZero() {
		cond("until_at <= $%d", q.DueBy)
	}
	if a := q.After; a != nil {
		at, ns := splitTime(a.QueuedAt)
		args = append(args, a.Price.String(), at, ns, a.ID)
		n := len(args)
		where = append(where, fmt.Sprintf("(price < $%d OR (price = $%d AND (queued_at, queued_ns, id) > ($%d, $%d, $%d)))", n-3, n-3, n-2, n-1, n))
	}
	sql := `SELECT record FROM book`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, ` AND `)
	}
	args = append(args, rowLimit(q.Limit))
	sql += fmt.Sprintf(` ORDER BY price DESC, queued_at, queued_ns, id LIMIT $%d`, len(args))
	out := []contract.Waiting{}
	b := &pgx.Batch{}
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var rec string
			if err := rows.Scan(&rec); err != nil {
				return err
			}
			w, err := waitingOf(rec)
			if err != nil {
				return err
			}
			out = append(out, w)
		}
		return rows.Err()
	})
	if err := s.l.Send(ctx, b); err != nil {
		return nil, err
	}
	return out, nil
}

// Unqueue deletes the row and returns it, in one statement: of two that
// race, one deletes it.
func (s *Store) Unqueue(ctx context.Context, id string) (contract.Waiting, error) {
	var rec *string
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM book WHERE id = $1 RETURNING record`, id).QueryRow(func(row pgx.Row) error { return noRows(row.Scan(&rec)) })
	if err := s.l.Send(ctx, b); err != nil {
		return contract.Waiting{}, err
	}
	if rec == nil {
		return contract.Waiting{}, currency.NotFound("sqlstore.Unqueue", "waiting offer "+id)
	}
	return waitingOf(*rec)
}

// queueBooked queues the read of the waiting offers of the group's
// contracts made from the book, each row locked until the commit, and
// returns the set it fills: such a contract is made only if its waiting
// offer is still there. Nothing is read where no contract comes from the
// book.
func queueBooked(b *pgx.Batch, jobs []*job) map[string]bool {
	var ids []string
	for _, j := range jobs {
		if j.open != nil && !j.open.row.c.QueuedAt.IsZero() {
			ids = append(ids, j.open.row.c.ID)
		}
	}
	booked := map[string]bool{}
	if len(ids) == 0 {
		return booked
	}
	b.Queue(`SELECT id FROM book WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			booked[id] = true
		}
		return rows.Err()
	})
	return booked
}

// queueUnbook deletes, with the commit, the waiting offers of the
// contracts made: a contract ends its request's wait, whether it came
// from the book or from a retry of the request that was accepted at
// once.
func queueUnbook(t *sqlledger.Tx, added []*row) {
	if len(added) == 0 {
		return
	}
	ids := make([]string, len(added))
	for i, r := range added {
		ids[i] = r.c.ID
	}
	t.Queue(`DELETE FROM book WHERE id = ANY($1)`, ids)
}
