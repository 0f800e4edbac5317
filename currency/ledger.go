package currency

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Ledger is the double-entry ledger. Implementations: currency/mem and
// currency/sqlledger; both pass currency/ledgertest.
//
// Apply applies ops in order, each atomically, and returns one Result per op;
// ops that fail for a business reason carry Result.Err and do not stop the
// others. The returned error means the ledger could not answer (a database
// failure, a cancelled context): the ops may or may not have been applied
// (a connection can drop during COMMIT), so retry with the same keys, which
// makes the retry safe either way.
type Ledger interface {
	CreateCurrency(ctx context.Context, c Currency) error
	Currency(ctx context.Context, code Code) (Currency, error)
	OpenAccount(ctx context.Context, a Account) (Account, error)
	Account(ctx context.Context, id AccountID) (Account, error)
	// Currencies lists every currency, by code.
	Currencies(ctx context.Context) ([]Currency, error)
	// Accounts lists accounts in ID order, a page at a time (see
	// AccountQuery), for consoles and reports.
	Accounts(ctx context.Context, q AccountQuery) ([]Account, error)
	Apply(ctx context.Context, ops ...Op) ([]Result, error)
	Balance(ctx context.Context, id AccountID) (Balance, error)
	// Balances reads several accounts' balances at once (one round trip
	// on a database), for checks that need a few before they act, such
	// as an offer's funds and caps: the i-th is ids[i]'s. An account that
	// does not exist is no error: its Balance is the zero Balance, whose
	// Account is empty.
	Balances(ctx context.Context, ids ...AccountID) ([]Balance, error)
	Hold(ctx context.Context, id HoldID) (Hold, error)
	// DueHolds lists up to limit open holds whose deadline has passed by the
	// ledger's clock, oldest deadline first, for a sweep to Expire.
	DueHolds(ctx context.Context, limit int) ([]Hold, error)
	// Statement lists up to limit entries of an account with Seq > after.
	Statement(ctx context.Context, id AccountID, after int64, limit int) ([]Entry, error)
	Audit(ctx context.Context) (Report, error)
}

// Do applies one op and returns its result, with a business failure as the
// error too (a *bourse.Error).
func Do(ctx context.Context, l Ledger, op Op) (Result, error) {
	rs, err := l.Apply(ctx, op)
	if err != nil {
		return Result{}, err
	}
	if rs[0].Err != nil {
		return rs[0], rs[0].Err
	}
	return rs[0], nil
}

// NotFound is the error of lookups that find nothing.
func NotFound(op, what string) error {
	return &bourse.Error{Code: bourse.ENotFound, Op: op, Message: "no " + what}
}

// AccountQuery selects a page of accounts: those of Currency and Kind
// (either empty for any) with an ID after After, at most Limit of them
// (DefaultPage when zero or above MaxPage).
type AccountQuery struct {
	Currency Code
	Kind     Kind
	After    AccountID
	Limit    int
}

// Page sizes of listings.
const (
	DefaultPage = 100
	MaxPage     = 1000
)

// PageLimit is q's limit within [1, MaxPage].
func (q AccountQuery) PageLimit() int {
	if q.Limit <= 0 {
		return DefaultPage
	}
	return min(q.Limit, MaxPage)
}

// Match reports whether a is one of the accounts q selects, its page aside.
func (q AccountQuery) Match(a Account) bool {
	return (q.Currency == "" || a.Currency == q.Currency) && (q.Kind == "" || a.Kind == q.Kind) && a.ID > q.After
}

// TxReader is what a transaction of a ledger's reads (mem.Tx and
// sqlledger.Tx): nothing it reads changes before the transaction ends, so
// that an amount decided on what it read moves on that, whoever else is
// moving money at the same time.
type TxReader interface {
	// Balance is id's own balance, its money not held; found is false
	// where there is no such account.
	Balance(ctx context.Context, id AccountID) (balance decimal.Decimal, found bool, err error)
	// Held is the sum of id's open holds.
	Held(ctx context.Context, id AccountID) (decimal.Decimal, error)
	// Net is what account has received from counterparty less what it
	// has sent it.
	Net(ctx context.Context, account, counterparty AccountID) (decimal.Decimal, error)
	// Used reports whether an operation has been applied under key, or
	// has failed under it: whether an operation under it would be a
	// replay rather than a first application.
	Used(ctx context.Context, key string) (bool, error)
}
