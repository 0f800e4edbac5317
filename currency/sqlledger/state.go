package sqlledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// state is the currency.Books of one transaction attempt. It reads rows in
// batches (load), locking accounts and holds until commit, and keeps them:
// the rules then run on memory. Writes change the kept rows and queue new
// ones; flush sends them all, with COMMIT, in one batch.
type state struct {
	l *Ledger
	t *tx

	// What the transaction has read or written. A nil value means "read,
	// and there is no such row".
	accounts map[currency.AccountID]*accountRow
	holds    map[currency.HoldID]*holdRow
	results  map[string]*resultRow

	// Writes, in order.
	currencies []currency.Currency
	dirty      []*accountRow // new or changed accounts
	dirtyHolds []*holdRow
	movements  []currency.Movement
	entries    []entryRow
	newResults []*resultRow
	// Statements of Tx.Queue, sent after the ledger's writes.
	queued []*pgx.QueuedQuery

	// How to undo the writes since the first Tx.Mark, newest last
	// (undo.go); kept only once a mark has been taken.
	journaling bool
	journal    []func()
}

type accountRow struct {
	currency.Account
	uid     uid
	balance decimal.Decimal
	count   int64 // entries so far: the last entry's seq
	isNew   bool  // inserted by this transaction
	dirty   bool  // in state.dirty
}

type holdRow struct {
	currency.Hold
	isNew, dirty bool
}

type resultRow struct {
	r           currency.Result
	fingerprint string
}

type entryRow struct {
	account  uid
	seq      int64
	movement uid
	amount   decimal.Decimal
	balance  decimal.Decimal
}

var _ currency.Books = (*state)(nil)

func (l *Ledger) newState(t *tx) *state {
	return &state{
		l:        l,
		t:        t,
		accounts: map[currency.AccountID]*accountRow{},
		holds:    map[currency.HoldID]*holdRow{},
		results:  map[string]*resultRow{},
	}
}

func (s *state) Now() time.Time { return s.l.now() }

// Queries of load. Accounts and holds are locked in key order, so that
// transactions that need the same rows queue up instead of deadlocking.
// Accounts come with the wallets that fund the holds asked for, in the same
// statement so that all are locked in one order.
//
// selectAccounts has two spellings of one query. PostgreSQL plans
// uid = ANY(array) as an index scan even in a generic plan, where it would
// hash-join a sequential scan of accounts for the IN (… UNION …) form (and
// the scan's predicate lock on the whole table would then make every
// SERIALIZABLE transaction conflict with every other). CockroachDB plans
// the IN form as a lookup join.
const (
	selectAccountsPG = `SELECT ` + accountColumns + ` FROM accounts
WHERE uid = ANY(array_cat($1::UUID[], ARRAY(SELECT from_uid FROM holds WHERE uid = ANY($2::UUID[]))))
ORDER BY uid FOR UPDATE`
	selectAccountsCRDB = `SELECT ` + accountColumns + ` FROM accounts
WHERE uid IN (SELECT unnest($1::UUID[]) UNION SELECT from_uid FROM holds WHERE uid = ANY($2::UUID[]))
ORDER BY uid FOR UPDATE`
	accountColumns = `id, currency, kind, parent, balance::TEXT, entry_count, created, created_ns`
	selectHolds    = `SELECT ` + holdColumns + ` FROM holds WHERE uid = ANY($1::UUID[]) ORDER BY uid FOR UPDATE`
	holdColumns    = `id, currency, from_account, amount::TEXT, status, deadline, deadline_ns,
captured_to, captured::TEXT, released::TEXT, created, created_ns, resolved, resolved_ns`
	selectResults = `SELECT idem_key, fingerprint, result FROM results WHERE uid = ANY($1::UUID[])`
)

// load reads, in one round trip, the accounts, holds (with their wallets)
// and results named that the transaction has not read yet.
func (s *state) load(ctx context.Context, accounts []currency.AccountID, holds []currency.HoldID, keys []string) error {
	b := &pgx.Batch{}
	loaded := s.queueLoad(b, accounts, holds, keys)
	if err := s.t.send(ctx, b); err != nil {
		return err
	}
	loaded()
	return nil
}

// queueLoad queues load's queries on b. Once b has been sent, loaded marks
// the rows asked for that the queries did not find as absent.
func (s *state) queueLoad(b *pgx.Batch, accounts []currency.AccountID, holds []currency.HoldID, keys []string) (loaded func()) {
	wantA, auids := missing(s.accounts, accounts, accountUID)
	wantH, huids := missing(s.holds, holds, holdUID)
	wantR, ruids := missing(s.results, keys, resultUID)
	if len(auids) > 0 || len(huids) > 0 {
		q := selectAccountsPG
		if s.l.crdb {
			q = selectAccountsCRDB
		}
		b.Queue(q, auids, huids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				a, err := scanAccount(rows)
				if err != nil {
					return err
				}
				// A hold's wallet may be in hand already, and changed:
				// keep ours.
				if _, ok := s.accounts[a.ID]; !ok {
					s.accounts[a.ID] = a
				}
			}
			return rows.Err()
		})
	}
	if len(huids) > 0 {
		b.Queue(selectHolds, huids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				h, err := scanHold(rows)
				if err != nil {
					return err
				}
				s.holds[h.ID] = &holdRow{Hold: h}
			}
			return rows.Err()
		})
	}
	if len(ruids) > 0 {
		b.Queue(selectResults, ruids).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var key, print, js string
				if err := rows.Scan(&key, &print, &js); err != nil {
					return err
				}
				var r currency.Result
				if err := json.Unmarshal([]byte(js), &r); err != nil {
					return fmt.Errorf("result of key %q: %w", key, err)
				}
				s.results[key] = &resultRow{r: r, fingerprint: print}
			}
			return rows.Err()
		})
	}
	return func() {
		for _, id := range wantA {
			if _, ok := s.accounts[id]; !ok {
				s.accounts[id] = nil
			}
		}
		for _, id := range wantH {
			if _, ok := s.holds[id]; !ok {
				s.holds[id] = nil
			}
		}
		for _, k := range wantR {
			if _, ok := s.results[k]; !ok {
				s.results[k] = nil
			}
		}
	}
}

// missing returns the distinct keys that have not been read into have,
// and their row keys.
func missing[K ~string, V any](have map[K]V, keys []K, rowKey func(K) uid) ([]K, []uid) {
	var want []K
	var uids []uid
	seen := make(map[K]bool, len(keys))
	for _, k := range keys {
		if _, ok := have[k]; ok || seen[k] {
			continue
		}
		seen[k] = true
		want = append(want, k)
		uids = append(uids, rowKey(k))
	}
	return want, uids
}

// prefetch loads everything that ops will read, so that the rules find it
// in memory: the whole read side of a batch of operations is one round
// trip.
func (s *state) prefetch(ctx context.Context, ops []currency.Op) error {
	b := &pgx.Batch{}
	loaded := s.queuePrefetch(b, ops)
	if err := s.t.send(ctx, b); err != nil {
		return err
	}
	loaded()
	return nil
}

// queuePrefetch queues prefetch's queries on b, as queueLoad does.
func (s *state) queuePrefetch(b *pgx.Batch, ops []currency.Op) (loaded func()) {
	var accounts []currency.AccountID
	var holds []currency.HoldID
	keys := make([]string, 0, len(ops))
	for _, op := range ops {
		keys = append(keys, op.IdempotencyKey())
		switch o := op.(type) {
		case currency.Transfer:
			accounts = append(accounts, o.From, o.To)
		case currency.Convert:
			accounts = append(accounts, o.From, o.To)
		case currency.Reserve:
			accounts = append(accounts, o.From, currency.EscrowID(o.Hold))
			holds = append(holds, o.Hold)
		case currency.Capture:
			accounts = append(accounts, o.To, currency.EscrowID(o.Hold))
			holds = append(holds, o.Hold)
		case currency.Void:
			accounts = append(accounts, currency.EscrowID(o.Hold))
			holds = append(holds, o.Hold)
		case currency.Expire:
			accounts = append(accounts, currency.EscrowID(o.Hold))
			holds = append(holds, o.Hold)
		}
	}
	return s.queueLoad(b, accounts, holds, keys)
}

func (s *state) account(ctx context.Context, id currency.AccountID) (*accountRow, error) {
	a, ok := s.accounts[id]
	if !ok {
		if err := s.load(ctx, []currency.AccountID{id}, nil, nil); err != nil {
			return nil, err
		}
		a = s.accounts[id]
	}
	return a, nil
}

func (s *state) Currency(ctx context.Context, code currency.Code) (currency.Currency, bool, error) {
	if c, ok := s.l.cachedCurrency(code); ok {
		return c, true, nil
	}
	for _, c := range s.currencies {
		if c.Code == code {
			return c, true, nil
		}
	}
	c, found, err := s.l.readCurrency(ctx, s.t.send, code)
	if err == nil && found {
		s.l.cacheCurrency(c) // committed before we read it: immutable from now on
	}
	return c, found, err
}

func (s *state) Account(ctx context.Context, id currency.AccountID) (currency.Account, bool, error) {
	a, err := s.account(ctx, id)
	if err != nil || a == nil {
		return currency.Account{}, false, err
	}
	return a.Account, true, nil
}

func (s *state) Balance(ctx context.Context, id currency.AccountID) (decimal.Decimal, error) {
	a, err := s.account(ctx, id)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if a == nil {
		return decimal.Decimal{}, fmt.Errorf("balance of %s: no such account", id)
	}
	return a.balance, nil
}

func (s *state) Hold(ctx context.Context, id currency.HoldID) (currency.Hold, bool, error) {
	h, ok := s.holds[id]
	if !ok {
		if err := s.load(ctx, nil, []currency.HoldID{id}, nil); err != nil {
			return currency.Hold{}, false, err
		}
		h = s.holds[id]
	}
	if h == nil {
		return currency.Hold{}, false, nil
	}
	return h.Hold, true, nil
}

func (s *state) Result(ctx context.Context, key string) (currency.Result, string, bool, error) {
	r, ok := s.results[key]
	if !ok {
		if err := s.load(ctx, nil, nil, []string{key}); err != nil {
			return currency.Result{}, "", false, err
		}
		r = s.results[key]
	}
	if r == nil {
		return currency.Result{}, "", false, nil
	}
	return r.r, r.fingerprint, true, nil
}

func (s *state) PutCurrency(_ context.Context, c currency.Currency) error {
	s.currencies = append(s.currencies, c)
	return nil
}

func (s *state) PutAccount(_ context.Context, a currency.Account) error {
	if s.accounts[a.ID] != nil {
		return fmt.Errorf("account %s exists", a.ID)
	}
	row := &accountRow{Account: a, uid: accountUID(a.ID), isNew: true, dirty: true}
	rememberKey(s, s.accounts, a.ID)
	s.accounts[a.ID] = row
	s.dirty = append(s.dirty, row)
	return nil
}

func (s *state) PutHold(_ context.Context, h currency.Hold) error {
	row := s.holds[h.ID]
	if row == nil {
		rememberKey(s, s.holds, h.ID)
		row = &holdRow{isNew: true}
		s.holds[h.ID] = row
	} else {
		old := *row
		s.remember(func() { *row = old })
	}
	row.Hold = h
	if !row.dirty {
		row.dirty = true
		s.dirtyHolds = append(s.dirtyHolds, row)
	}
	return nil
}

func (s *state) Post(ctx context.Context, m currency.Movement) error {
	from, err := s.account(ctx, m.From)
	if err != nil {
		return err
	}
	to, err := s.account(ctx, m.To)
	if err != nil {
		return err
	}
	if from == nil || to == nil {
		return fmt.Errorf("movement %s between unknown accounts", m.ID)
	}
	muid := movementUID(m.ID)
	s.movements = append(s.movements, m)
	s.entry(from, muid, m.Amount.Neg())
	s.entry(to, muid, m.Amount)
	return nil
}

func (s *state) entry(a *accountRow, movement uid, amount decimal.Decimal) {
	s.rememberAccount(a)
	a.balance = a.balance.Add(amount)
	a.count++
	s.entries = append(s.entries, entryRow{account: a.uid, seq: a.count, movement: movement, amount: amount, balance: a.balance})
	if !a.dirty {
		a.dirty = true
		s.dirty = append(s.dirty, a)
	}
}

func (s *state) PutResult(_ context.Context, r currency.Result, fingerprint string) error {
	row := &resultRow{r: r, fingerprint: fingerprint}
	rememberKey(s, s.results, r.Key)
	s.results[r.Key] = row
	s.newResults = append(s.newResults, row)
	return nil
}

// scanAccount reads accountColumns.
func scanAccount(row pgx.Row) (*accountRow, error) {
	var a accountRow
	var id, cur, kind, parent, balance string
	var created time.Time
	var ns int32
	if err := row.Scan(&id, &cur, &kind, &parent, &balance, &a.count, &created, &ns); err != nil {
		return nil, err
	}
	bal, err := parseDec(balance)
	if err != nil {
		return nil, err
	}
	a.Account = currency.Account{ID: currency.AccountID(id), Currency: currency.Code(cur), Kind: currency.Kind(kind),
		Parent: currency.AccountID(parent), Created: joinTime(created, ns)}
	a.uid, a.balance = accountUID(a.ID), bal
	return &a, nil
}

// scanHold reads holdColumns.
func scanHold(row pgx.Row) (currency.Hold, error) {
	var id, cur, from, amount, status, capturedTo, captured, released string
	var deadline, created time.Time
	var resolved pgtype.Timestamptz
	var deadlineNS, createdNS, resolvedNS int32
	if err := row.Scan(&id, &cur, &from, &amount, &status, &deadline, &deadlineNS, &capturedTo, &captured, &released,
		&created, &createdNS, &resolved, &resolvedNS); err != nil {
		return currency.Hold{}, err
	}
	h := currency.Hold{ID: currency.HoldID(id), Currency: currency.Code(cur), From: currency.AccountID(from),
		Status: currency.HoldStatus(status), Deadline: joinTime(deadline, deadlineNS), CapturedTo: currency.AccountID(capturedTo),
		Created: joinTime(created, createdNS)}
	if resolved.Valid {
		h.Resolved = joinTime(resolved.Time, resolvedNS)
	}
	var err error
	if h.Amount, err = parseDec(amount); err != nil {
		return currency.Hold{}, err
	}
	if h.Captured, err = parseDec(captured); err != nil {
		return currency.Hold{}, err
	}
	if h.Released, err = parseDec(released); err != nil {
		return currency.Hold{}, err
	}
	return h, nil
}
