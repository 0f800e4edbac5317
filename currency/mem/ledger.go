// Package mem is the in-memory ledger: one mutex around maps, for the
// simulator, the demo and unit tests. It keeps every rule of package currency
// (it applies them through currency.Apply) but nothing survives the process.
package mem

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

var _ currency.Ledger = (*Ledger)(nil)

// Ledger is safe for concurrent use. Its zero value is not; use New.
//
// A ledger keeps every movement until Compact folds the finished ones
// into per-account carried-forward figures (compact.go).
type Ledger struct {
	now      func() time.Time
	remember time.Duration

	mu         sync.Mutex
	currencies map[currency.Code]currency.Currency
	accounts   map[currency.AccountID]*account
	holds      map[currency.HoldID]currency.Hold
	held       map[currency.AccountID]decimal.Decimal // open holds per wallet
	due        dueIndex                               // open holds by deadline
	results    map[string]stored
	// movements are those still on a statement, in the order posted.
	movements []*movement
	moveIDs   map[string]struct{}
	posted    uint64 // movements ever posted: the last one's seq
	// forgotten are the idempotency keys and hold ids Compact forgot.
	forgotten *Names
	// compacted sums the holds Compact forgot, per currency.
	compacted map[currency.Code]*holdTotals
}

// Kinds of names in Ledger.forgotten.
const (
	forgottenKey  = 'k'
	forgottenHold = 'h'
)

type account struct {
	currency.Account
	balance decimal.Decimal
	entries []entry
	// Compact folds a prefix of the entries into carried, the balance
	// before entries[0]: base entries (so entries[i] has Seq base+i+1),
	// the last of them at carriedAt and of movement seq upTo.
	carried   decimal.Decimal
	base      int64
	upTo      uint64
	carriedAt time.Time
}

// entry is one side of a movement, with the balance after it.
type entry struct {
	m       *movement
	balance decimal.Decimal
}

// movement is a posted movement, numbered from 1 in the order posted;
// from and to say whether each side's entry is still on its statement.
type movement struct {
	currency.Movement
	seq      uint64
	from, to bool
}

type stored struct {
	r           currency.Result
	fingerprint string
	at          time.Time
}

// Options configure a Ledger; the zero value uses the wall clock.
type Options struct {
	// Now is the ledger's clock (the simulator passes its virtual one).
	Now func() time.Time
	// Remember is how long after Compact forgets an idempotency key or a
	// hold id the ledger still recognises it (and refuses it); zero is
	// for ever, at about 30 bytes a name. See Compact.
	Remember time.Duration
}

// New returns an empty ledger.
func New(opts Options) *Ledger {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &Ledger{
		now:        now,
		remember:   opts.Remember,
		currencies: map[currency.Code]currency.Currency{},
		accounts:   map[currency.AccountID]*account{},
		holds:      map[currency.HoldID]currency.Hold{},
		held:       map[currency.AccountID]decimal.Decimal{},
		results:    map[string]stored{},
		moveIDs:    map[string]struct{}{},
		forgotten:  NewNames(opts.Remember),
		compacted:  map[currency.Code]*holdTotals{},
	}
}

// Remember is Options.Remember, for stores beside the ledger that forget
// their records in step with it.
func (l *Ledger) Remember() time.Duration { return l.remember }

func (l *Ledger) CreateCurrency(ctx context.Context, c currency.Currency) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return currency.CreateCurrency(ctx, state{l}, c)
}

func (l *Ledger) Currency(_ context.Context, code currency.Code) (currency.Currency, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.currencies[code]
	if !ok {
		return currency.Currency{}, &bourse.Error{Code: bourse.EUnknownCurrency, Op: "mem.Currency", Message: "no currency " + string(code)}
	}
	return c, nil
}

func (l *Ledger) OpenAccount(ctx context.Context, a currency.Account) (currency.Account, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return currency.OpenAccount(ctx, state{l}, a)
}

func (l *Ledger) Account(_ context.Context, id currency.AccountID) (currency.Account, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[id]
	if !ok {
		return currency.Account{}, currency.NotFound("mem.Account", "account "+string(id))
	}
	return a.Account, nil
}

// Apply applies ops in order under the ledger's lock. The in-memory state
// cannot fail, so only a context cancelled before the start stops it.
func (l *Ledger) Apply(ctx context.Context, ops ...currency.Op) ([]currency.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := make([]currency.Result, len(ops))
	for i, op := range ops {
		r, err := currency.Apply(ctx, state{l}, op)
		if err != nil {
			// state never fails; an error here is a bug in the rules.
			return nil, err
		}
		rs[i] = r
	}
	return rs, nil
}

func (l *Ledger) Balance(_ context.Context, id currency.AccountID) (currency.Balance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[id]
	if !ok {
		return currency.Balance{}, currency.NotFound("mem.Balance", "account "+string(id))
	}
	return currency.Balance{Account: id, Currency: a.Currency, Available: a.balance, Held: l.held[id]}, nil
}

func (l *Ledger) Balances(_ context.Context, ids ...currency.AccountID) ([]currency.Balance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]currency.Balance, len(ids))
	for i, id := range ids {
		if a, ok := l.accounts[id]; ok {
			out[i] = currency.Balance{Account: id, Currency: a.Currency, Available: a.balance, Held: l.held[id]}
		}
	}
	return out, nil
}

// Hold returns hold id; one that Compact forgot is ENotFound wrapping
// currency.ErrForgotten.
func (l *Ledger) Hold(_ context.Context, id currency.HoldID) (currency.Hold, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.holds[id]
	if !ok {
		if l.forgotten.Has(forgottenHold, string(id)) {
			return currency.Hold{}, &bourse.Error{Code: bourse.ENotFound, Op: "mem.Hold",
				Message: "hold " + string(id) + " was resolved and compacted", Err: currency.ErrForgotten}
		}
		return currency.Hold{}, currency.NotFound("mem.Hold", "hold "+string(id))
	}
	return h, nil
}

func (l *Ledger) DueHolds(_ context.Context, limit int) ([]currency.Hold, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dueHolds(l.now(), limit), nil
}

// Statement lists an account's entries with Seq > after. Once Compact has
// folded its first entries into a carried-forward figure, a statement
// that starts before them begins with one line for them all
// (currency.CarriedForward), whose Seq is the last of them.
func (l *Ledger) Statement(_ context.Context, id currency.AccountID, after int64, limit int) ([]currency.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, ok := l.accounts[id]
	if !ok {
		return nil, currency.NotFound("mem.Statement", "account "+string(id))
	}
	after = max(after, 0)
	var out []currency.Entry
	if a.base > 0 && after < a.base {
		out = append(out, currency.Entry{Account: id, Seq: a.base, Movement: currency.CarriedForward,
			Amount: a.carried, Balance: a.carried, At: a.carriedAt,
			Memo: fmt.Sprintf("%d entries carried forward", a.base)})
	}
	for i := int(min(max(after-a.base, 0), int64(len(a.entries)))); i < len(a.entries); i++ {
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, entryOf(id, a.base+int64(i+1), a.entries[i]))
	}
	return out, nil
}

func entryOf(id currency.AccountID, seq int64, e entry) currency.Entry {
	m := e.m
	out := currency.Entry{Account: id, Seq: seq, Movement: m.ID, Key: m.Key, Amount: m.Amount,
		Balance: e.balance, Hold: m.Hold, Memo: m.Memo, At: m.At, Counterparty: m.To}
	if m.To == id {
		out.Counterparty = m.From
	} else {
		out.Amount = m.Amount.Neg()
	}
	return out
}
