package sqlledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bourse/bourse/currency"
)

// A check is one audit query: each row it returns is a violation of rule,
// which row turns into words, writing amounts with money (at their
// currency's places).
type check struct {
	rule string
	sql  string
	row  func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error)
}

// checks are the invariants of currency/audit.go, in SQL. Amounts come back
// as text: they are only printed, at their currency's places (exactly,
// where a broken ledger holds finer ones).
var checks = []check{{
	rule: currency.RuleZeroSum,
	sql: `SELECT currency, SUM(balance)::TEXT FROM accounts
GROUP BY currency HAVING SUM(balance) <> 0 ORDER BY currency`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var sum string
		err := r.Scan(&v.Currency, &sum)
		v.Detail = "balances sum to " + money(v.Currency, sum)
		return v, err
	},
}, {
	rule: currency.RuleNonNegative,
	sql: `SELECT id, currency, balance::TEXT FROM accounts
WHERE balance < 0 AND kind <> 'issuance' ORDER BY id`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var bal string
		err := r.Scan(&v.Account, &v.Currency, &bal)
		v.Detail = "balance " + money(v.Currency, bal)
		return v, err
	},
}, {
	// The balance, the entry count and the last running balance against
	// the entries themselves; seqs must run 1..n.
	rule: currency.RuleEntries,
	sql: `SELECT a.id, a.currency, a.balance::TEXT, a.entry_count,
  COALESCE(e.n, 0), COALESCE(e.total, 0)::TEXT, COALESCE(e.max_seq, 0), COALESCE(last.balance_after, 0)::TEXT
FROM accounts a
LEFT JOIN (SELECT account_uid, COUNT(*) AS n, SUM(amount) AS total, MAX(seq) AS max_seq
           FROM entries GROUP BY account_uid) e ON e.account_uid = a.uid
LEFT JOIN entries last ON last.account_uid = a.uid AND last.seq = e.max_seq
WHERE a.balance <> COALESCE(e.total, 0) OR a.entry_count <> COALESCE(e.n, 0) OR COALESCE(e.max_seq, 0) <> COALESCE(e.n, 0)
   OR COALESCE(last.balance_after, 0) <> a.balance
ORDER BY a.id`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var bal, total, last string
		var count, n, maxSeq int64
		err := r.Scan(&v.Account, &v.Currency, &bal, &count, &n, &total, &maxSeq, &last)
		v.Detail = fmt.Sprintf("balance %s after %d entries; the entries: %d (last seq %d) summing to %s, last running balance %s",
			money(v.Currency, bal), count, n, maxSeq, money(v.Currency, total), money(v.Currency, last))
		return v, err
	},
}, {
	// Each running balance is the one before plus the entry.
	rule: currency.RuleEntries,
	sql: `SELECT a.id, a.currency, x.seq, x.amount::TEXT, x.balance_after::TEXT, x.prev::TEXT
FROM (SELECT account_uid, seq, amount, balance_after,
        COALESCE(LAG(balance_after) OVER (PARTITION BY account_uid ORDER BY seq), 0) AS prev
      FROM entries) x
JOIN accounts a ON a.uid = x.account_uid
WHERE x.balance_after <> x.prev + x.amount
ORDER BY a.id, x.seq`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var seq int64
		var amount, after, prev string
		err := r.Scan(&v.Account, &v.Currency, &seq, &amount, &after, &prev)
		v.Detail = fmt.Sprintf("entry %d says balance %s, but %s + %s", seq, money(v.Currency, after), money(v.Currency, prev), money(v.Currency, amount))
		return v, err
	},
}, {
	// Each movement: exactly two entries, -amount on From and +amount on
	// To, both accounts of the movement's currency.
	rule: currency.RuleDoubleEntry,
	sql: `SELECT id, currency, n, from_ok, to_ok, COALESCE(from_cur, ''), COALESCE(to_cur, '')
FROM (SELECT m.id, m.currency, COUNT(e.seq) AS n,
        COALESCE(SUM(CASE WHEN e.account_uid = fa.uid AND e.amount = -m.amount THEN 1 ELSE 0 END), 0) AS from_ok,
        COALESCE(SUM(CASE WHEN e.account_uid = ta.uid AND e.amount = m.amount THEN 1 ELSE 0 END), 0) AS to_ok,
        MAX(fa.currency) AS from_cur, MAX(ta.currency) AS to_cur
      FROM movements m
      LEFT JOIN accounts fa ON fa.id = m.from_account
      LEFT JOIN accounts ta ON ta.id = m.to_account
      LEFT JOIN entries e ON e.movement_uid = m.uid
      GROUP BY m.uid, m.id, m.currency) x
WHERE n <> 2 OR from_ok <> 1 OR to_ok <> 1 OR from_cur IS NULL OR to_cur IS NULL
   OR from_cur <> currency OR to_cur <> currency
ORDER BY id`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var id, fromCur, toCur string
		var n, fromOK, toOK int64
		err := r.Scan(&id, &v.Currency, &n, &fromOK, &toOK, &fromCur, &toCur)
		v.Detail = fmt.Sprintf("movement %s has %d entries (%d matching its From, %d its To), between accounts of currencies %q and %q",
			id, n, fromOK, toOK, fromCur, toCur)
		return v, err
	},
}, {
	// Entries that belong to no movement or no account.
	rule: currency.RuleDoubleEntry,
	sql: `SELECT COALESCE(a.id, e.account_uid::TEXT), COALESCE(a.currency, ''), e.seq, m.uid IS NULL, a.uid IS NULL
FROM entries e
LEFT JOIN movements m ON m.uid = e.movement_uid
LEFT JOIN accounts a ON a.uid = e.account_uid
WHERE m.uid IS NULL OR a.uid IS NULL
ORDER BY 1, e.seq`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var seq int64
		var noMovement, noAccount bool
		err := r.Scan(&v.Account, &v.Currency, &seq, &noMovement, &noAccount)
		v.Detail = fmt.Sprintf("entry %d belongs to no movement", seq)
		if noAccount {
			v.Detail = fmt.Sprintf("entry %d belongs to no account", seq)
		}
		return v, err
	},
}, {
	rule: currency.RuleAppliedOnce,
	sql: `SELECT id, MIN(currency), COUNT(*) FROM movements
GROUP BY id HAVING COUNT(*) > 1 ORDER BY id`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var id string
		var n int64
		err := r.Scan(&id, &v.Currency, &n)
		v.Detail = fmt.Sprintf("movement %s posted %d times", id, n)
		return v, err
	},
}, {
	// A key's movements all come from one operation: one transfer, one
	// exchange (its two legs), one reserve or one resolution of one hold.
	rule: currency.RuleAppliedOnce,
	sql: `SELECT idem_key, MIN(currency), COUNT(DISTINCT op) FROM (
  SELECT idem_key, currency, CASE
    WHEN id IN ('x/' || idem_key || '/out', 'x/' || idem_key || '/in') THEN 'exchange'
    WHEN hold_id = '' THEN id
    WHEN id = 'h/' || hold_id || '/reserve' THEN 'reserve ' || hold_id ELSE 'resolve ' || hold_id END AS op
  FROM movements) x
GROUP BY idem_key HAVING COUNT(DISTINCT op) > 1 ORDER BY idem_key`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var key string
		var n int64
		err := r.Scan(&key, &v.Currency, &n)
		v.Detail = fmt.Sprintf("key %q applied by %d operations", key, n)
		return v, err
	},
}, {
	// An exchange's out leg has its in leg, and the other way round.
	rule: currency.RuleConversionWhole,
	sql: `SELECT idem_key, MIN(currency), string_agg(id, ' ' ORDER BY id) FROM movements
WHERE id IN ('x/' || idem_key || '/out', 'x/' || idem_key || '/in')
GROUP BY idem_key HAVING COUNT(*) <> 2 ORDER BY idem_key`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var key, legs string
		err := r.Scan(&key, &v.Currency, &legs)
		v.Detail = fmt.Sprintf("exchange %q has only %s", key, legs)
		return v, err
	},
}, {
	rule: currency.RuleAppliedOnce,
	sql: `SELECT idem_key, COUNT(*) FROM results
GROUP BY idem_key HAVING COUNT(*) > 1 ORDER BY idem_key`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var key string
		var n int64
		err := r.Scan(&key, &n)
		v.Detail = fmt.Sprintf("key %q has %d results", key, n)
		return v, err
	},
}, {
	// Open: the escrow account holds the amount. Resolved: it is empty,
	// and captured + released = amount. (escrow/ID is currency.EscrowID.)
	rule: currency.RuleHoldBalanced,
	sql: `SELECT h.id, h.currency, h.status, h.amount::TEXT, h.captured::TEXT, h.released::TEXT, COALESCE(a.balance, 0)::TEXT
FROM holds h LEFT JOIN accounts a ON a.id = 'escrow/' || h.id
WHERE CASE WHEN h.status = 'open' THEN COALESCE(a.balance, 0) <> h.amount
      ELSE COALESCE(a.balance, 0) <> 0 OR h.captured + h.released <> h.amount END
ORDER BY h.id`,
	row: func(r pgx.CollectableRow, money func(currency.Code, string) string) (currency.Violation, error) {
		var v currency.Violation
		var status, amount, captured, released, escrow string
		err := r.Scan(&v.Hold, &v.Currency, &status, &amount, &captured, &released, &escrow)
		if status == string(currency.HoldOpen) {
			v.Detail = fmt.Sprintf("open hold of %s has %s in escrow", money(v.Currency, amount), money(v.Currency, escrow))
		} else {
			v.Detail = fmt.Sprintf("%s hold of %s: captured %s + released %s, %s left in escrow", status, money(v.Currency, amount), money(v.Currency, captured), money(v.Currency, released), money(v.Currency, escrow))
		}
		return v, err
	},
}}

// Audit checks every invariant of the ledger in SQL, on one snapshot of the
// database, and counts what it holds.
func (l *Ledger) Audit(ctx context.Context) (currency.Report, error) {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	if l.crdb {
		opts.IsoLevel = pgx.Serializable
	}
	var rep currency.Report
	err := l.retry(ctx, "audit", func() error {
		rep = currency.Report{}
		return pgx.BeginTxFunc(ctx, l.pool, opts, func(tx pgx.Tx) error {
			if !l.crdb {
				// Audit reads whole tables (see afterConnect).
				if _, err := tx.Exec(ctx, "SET LOCAL enable_seqscan = on; SET LOCAL plan_cache_mode = auto"); err != nil {
					return err
				}
			}
			if err := tx.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM currencies), (SELECT COUNT(*) FROM accounts),
  (SELECT COUNT(*) FROM movements), (SELECT COUNT(*) FROM holds), (SELECT COUNT(*) FROM holds WHERE status = 'open')`).
				Scan(&rep.Currencies, &rep.Accounts, &rep.Movements, &rep.Holds, &rep.OpenHolds); err != nil {
				return fmt.Errorf("count: %w", err)
			}
			scales, err := currencyScales(ctx, tx)
			if err != nil {
				return err
			}
			money := func(code currency.Code, s string) string {
				d, err := parseDec(s)
				if err != nil {
					return s
				}
				scale, ok := scales[code]
				if !ok {
					return d.String()
				}
				return currency.Format(d, scale)
			}
			for _, c := range checks {
				rows, err := tx.Query(ctx, c.sql)
				if err != nil {
					return fmt.Errorf("check %s: %w", c.rule, err)
				}
				vs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (currency.Violation, error) {
					v, err := c.row(r, money)
					v.Rule = c.rule
					return v, err
				})
				if err != nil {
					return fmt.Errorf("check %s: %w", c.rule, err)
				}
				rep.Violations = append(rep.Violations, vs...)
			}
			return nil
		})
	})
	if err != nil {
		return currency.Report{}, l.fail("audit", err)
	}
	return rep, nil
}

// currencyScales reads every currency's places, for the audit's words.
func currencyScales(ctx context.Context, tx pgx.Tx) (map[currency.Code]int32, error) {
	rows, err := tx.Query(ctx, `SELECT code, scale FROM currencies`)
	if err != nil {
		return nil, fmt.Errorf("scales: %w", err)
	}
	scales := map[currency.Code]int32{}
	var code string
	var scale int32
	if _, err := pgx.ForEachRow(rows, []any{&code, &scale}, func() error {
		scales[currency.Code(code)] = scale
		return nil
	}); err != nil {
		return nil, fmt.Errorf("scales: %w", err)
	}
	return scales, nil
}
