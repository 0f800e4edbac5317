package caps

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Bucket is a spend rate: a token bucket on what Owner may commit in
// Currency. Its budget (BucketWallet) holds at most Capacity, starts full
// and is refilled at PerHour, a Step at a time on a fixed grid of the
// clock (a minute if zero). Offers reserve from it as from any spend
// cap's budget; the treasury keeps its settings and refills it.
type Bucket struct {
	Owner    string
	Currency currency.Code
	Capacity decimal.Decimal
	PerHour  decimal.Decimal
	Step     time.Duration
}

// Wallet is the bucket's budget.
func (b Bucket) Wallet() currency.AccountID { return BucketWallet(b.Owner, b.Currency) }

func (b Bucket) step() time.Duration {
	if b.Step <= 0 {
		return time.Minute
	}
	return b.Step
}

// StepAt is the step of the refill's grid that at is in: steps are
// counted from the Unix epoch, so that every clock counts the same ones.
func (b Bucket) StepAt(at time.Time) int64 { return at.UnixNano() / int64(b.step()) }

// Change is what takes the bucket from capacity old (zero for a new
// bucket, which so starts full) to b.Capacity, under key: the difference
// given, or taken back as far as what is not held.
func (b Bucket) Change(old decimal.Decimal, key string) []currency.Op {
	return adjust(b.Currency, b.Wallet(), b.Capacity.Sub(old), key+"/bucket", "spend rate of "+b.Owner)
}

// Refill is what refills the bucket, whose budget has bal of its own
// (not what running contracts hold), for steps steps, under key: PerHour
// for the time the steps span, rounded down to scale (the currency's),
// up to the capacity. Held money is not counted, or a long contract
// would stop the refill; so refunds can take a bucket past its capacity
// for a while, and it refills no more until it is below. amount is zero,
// and there is no operation, where there is no room.
func (b Bucket) Refill(bal decimal.Decimal, steps int64, scale int32, key string) (amount decimal.Decimal, ops []currency.Op) {
	due := b.PerHour.Mul(decimal.NewFromInt(steps * int64(b.step()))).Div(decimal.NewFromInt(int64(time.Hour))).RoundDown(scale)
	amount = decimal.Max(decimal.Zero, decimal.Min(due, b.Capacity.Sub(bal)))
	if amount.IsPositive() {
		ops = []currency.Op{currency.Transfer{Key: key, From: currency.IssuanceID(SpendCode(b.Currency)), To: b.Wallet(), Amount: amount,
			Memo: fmt.Sprintf("refill of %d steps", steps)}}
	}
	return amount, ops
}
