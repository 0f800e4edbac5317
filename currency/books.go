package currency

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// Books is what applying operations needs from a backend, inside one of its
// transactions. Reads that return found=false mean "no such row"; any error
// is an infrastructure failure that aborts the backend's transaction, so
// nothing of it is kept and the caller may retry with the same keys.
//
// A backend that locks (SQL) locks the rows it reads here until commit.
type Books interface {
	Now() time.Time
	Currency(ctx context.Context, c Code) (Currency, bool, error)
	Account(ctx context.Context, id AccountID) (Account, bool, error)
	// Balance is the account's own balance; it exists when called.
	Balance(ctx context.Context, id AccountID) (decimal.Decimal, error)
	Hold(ctx context.Context, id HoldID) (Hold, bool, error)
	// Result is the stored outcome of an idempotency key and its fingerprint.
	Result(ctx context.Context, key string) (r Result, fingerprint string, found bool, err error)

	PutCurrency(ctx context.Context, c Currency) error
	// PutAccount inserts a new account with a zero balance.
	PutAccount(ctx context.Context, a Account) error
	// PutHold inserts a new hold or replaces an existing one.
	PutHold(ctx context.Context, h Hold) error
	// Post applies a movement: From's balance falls and To's rises by its
	// amount, and each gets the next entry of its statement.
	Post(ctx context.Context, m Movement) error
	PutResult(ctx context.Context, r Result, fingerprint string) error
}
