// Package allowance pays a wallet an allowance that decays its balance:
// dx/dt = a − b·x (seed 003), so that an idle wallet's balance tends to
// a/b, and with a = 0 halves every ln2/b (Slurm's decayed usage, for
// money). Amounts are minted from the currency's issuance account (or,
// where the balance is above a/b, returned to it) as ledger transfers,
// one per period of a fixed grid under the key of the rule's version and
// the period (Key), so that a scheduler run late, early, twice or from two
// machines at once mints each period once and the same amount, and a rule
// that replaces another never finds the other's payments under its keys.
//
// Between the wallet's own movements the balance follows the closed form
// x(n) = a/b + (x₀ − a/b)·qⁿ with q = e^(−b·period), rounded to the
// currency's scale at each grid point: what is minted for a period is the
// difference of two such values, so rounding does not accumulate
// (no drift from stepping). A movement of the wallet's own (a payment, a
// refund, a grant) starts a new stretch from the balance at the end of
// the period it fell in: a period's payment follows from its closing
// balance, so money spent during a period does not decay for it, and
// money received decays for the whole of it.
package allowance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// Rule is one wallet's allowance.
type Rule struct {
	Wallet currency.AccountID
	// A is paid per hour; B is the share of the balance that decays per
	// hour (0 for none: then A accrues without limit).
	A, B decimal.Decimal
	// Period is the grid's step, an hour if zero; Start its origin, the
	// first period's beginning. Nothing is paid for time before Start.
	Period time.Duration
	Start  time.Time
	// Version is the rule's version where a store keeps it (the
	// treasury's setting's), so that each version's payments have keys
	// of their own; zero for a rule kept nowhere (the simulator's).
	Version int64
}

// Validate says what is wrong with r.
func (r Rule) Validate() error {
	switch {
	case r.Wallet == "":
		return errors.New("allowance: no wallet")
	case r.A.IsNegative():
		return fmt.Errorf("allowance %s: a is negative (%s)", r.Wallet, r.A)
	case r.B.IsNegative():
		return fmt.Errorf("allowance %s: b is negative (%s)", r.Wallet, r.B)
	case r.A.IsZero() && r.B.IsZero():
		return fmt.Errorf("allowance %s: a and b are both zero: it does nothing", r.Wallet)
	case r.Period < 0:
		return fmt.Errorf("allowance %s: negative period", r.Wallet)
	case r.Start.IsZero():
		return fmt.Errorf("allowance %s: no start", r.Wallet)
	}
	return nil
}

func (r Rule) period() time.Duration {
	if r.Period == 0 {
		return time.Hour
	}
	return r.Period
}

// Steady is a/b, the balance an idle wallet tends to; ok is false where b
// is zero (no limit).
func (r Rule) Steady() (steady decimal.Decimal, ok bool) {
	if r.B.IsZero() {
		return decimal.Zero, false
	}
	return r.A.DivRound(r.B, precision), true
}

// HalfLife is how long the distance to a/b takes to halve, ln2/b; zero
// where b is zero.
func (r Rule) HalfLife() time.Duration {
	if r.B.IsZero() {
		return 0
	}
	return time.Duration(math.Ln2 / r.B.InexactFloat64() * float64(time.Hour))
}

// q is the decay over one period, e^(−b·period), and paid the A over it.
func (r Rule) q() decimal.Decimal {
	hours := decimal.NewFromInt(int64(r.period())).Div(decimal.NewFromInt(int64(time.Hour)))
	return expNeg(r.B.Mul(hours))
}

// value is the closed form n periods after a stretch began at x0.
func (r Rule) value(x0 decimal.Decimal, n int64, q decimal.Decimal, scale int32) decimal.Decimal {
	if r.B.IsZero() {
		hours := decimal.NewFromInt(int64(r.period())).Div(decimal.NewFromInt(int64(time.Hour)))
		return x0.Add(r.A.Mul(hours).Mul(decimal.NewFromInt(n))).Round(scale)
	}
	steady, _ := r.Steady()
	return steady.Add(x0.Sub(steady).Mul(pow(q, n))).Round(scale)
}

// Project is where an idle wallet's balance x0 is after d: the closed
// form at the last grid point by then, rounded to scale.
func (r Rule) Project(x0 decimal.Decimal, d time.Duration, scale int32) decimal.Decimal {
	return r.value(x0, int64(d/r.period()), r.q(), scale)
}

// Key is the idempotency key of the payment for period n (the period
// that ends at Start + n·Period) of version v of wallet's rule:
// allowance/<wallet>/v<v>/<n>, or allowance/<wallet>/<n> for version 0.
func Key(wallet currency.AccountID, v, n int64) string {
	return keyPrefix(wallet, v) + strconv.FormatInt(n, 10)
}

func keyPrefix(wallet currency.AccountID, v int64) string {
	if v == 0 {
		return paymentPrefix + string(wallet) + "/"
	}
	return paymentPrefix + string(wallet) + "/v" + strconv.FormatInt(v, 10) + "/"
}

// paymentPrefix begins the key of every allowance payment (Key).
const paymentPrefix = "allowance/"

// IsPayment says whether a ledger entry of key is an allowance's
// payment (Key), of any wallet, rule or period: what a wallet's
// statement got from its allowance.
func IsPayment(key string) bool { return strings.HasPrefix(key, paymentPrefix) }

// Paid is one period's payment.
type Paid struct {
	Period int64           `json:"period"` // n: the period ending at Start + n·Period
	Amount decimal.Decimal `json:"amount"` // into the wallet; negative: out of it
	Key    string          `json:"key"`
	New    bool            `json:"new"` // this run made it; false: it was made before
}

// Accrue pays every period of r that has ended by now and is not paid
// yet, oldest first, straight to the ledger, and returns every period's
// payment since Start. It reads the wallet's statement for its own
// movements and what was paid before, so it can run at any time and any
// number of times, from any number of places at once: each period is paid
// once, by its key.
//
// A period that would take more from the wallet than it holds when the
// payment is made (it spent between the period's end and the run) takes
// what there is, decided in the ledger's transaction (a Transfer UpTo),
// and the next periods go on from the balance that leaves. Only this race
// makes the payments depend on when the runs happen.
func Accrue(ctx context.Context, l currency.Ledger, r Rule, now time.Time) ([]Paid, error) {
	return AccrueWith(ctx, l, r, now, nil)
}

// A Payer makes period n's payment, t, and returns what it moved into the
// wallet (negative: out of it), t's first answer where it was made before.
// ErrStop says the rule pays no more for now (it was replaced, or the
// period has not ended by the payer's clock): Accrue returns what it has.
type Payer func(ctx context.Context, n int64, t currency.Transfer) (moved decimal.Decimal, err error)

// ErrStop is a Payer's answer when the rule pays no more for now.
var ErrStop = errors.New("allowance: the rule pays no more for now")

// AccrueWith is Accrue with each payment made by pay (the treasury's,
// which commits it in its trail while the rule's version is current); a
// nil pay applies it to l.
func AccrueWith(ctx context.Context, l currency.Ledger, r Rule, now time.Time, pay Payer) ([]Paid, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if pay == nil {
		pay = ledgerPayer(l, r.Wallet)
	}
	for range 5 {
		paid, err := accrue(ctx, l, r, now, pay)
		if bourse.ErrorCode(err) != bourse.EIdempotencyConflict {
			return paid, err
		}
	}
	return nil, fmt.Errorf("allowance %s: other runs kept paying the same periods otherwise (are the clocks of the machines that move money apart?)", r.Wallet)
}

func accrue(ctx context.Context, l currency.Ledger, r Rule, now time.Time, pay Payer) ([]Paid, error) {
	acct, err := l.Account(ctx, r.Wallet)
	if err != nil {
		return nil, fmt.Errorf("allowance %s: %w", r.Wallet, err)
	}
	cur, err := l.Currency(ctx, acct.Currency)
	if err != nil {
		return nil, fmt.Errorf("allowance %s: %w", r.Wallet, err)
	}
	entries, err := statement(ctx, l, r.Wallet)
	if err != nil {
		return nil, err
	}
	prefix := keyPrefix(r.Wallet, r.Version)
	before := map[int64]decimal.Decimal{} // payments made already, by period
	var own []currency.Entry              // the wallet's other movements, in order
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Key, prefix); ok {
			if k, err := strconv.ParseInt(n, 10, 64); err == nil {
				before[k] = before[k].Add(e.Amount)
				continue
			}
		}
		own = append(own, e)
	}

	p, q := r.period(), r.q()
	ended := int64(now.Sub(r.Start) / p)
	var paid []Paid
	// x is the balance: the wallet's own movements so far and the
	// payments of the periods before.
	x, i := decimal.Zero, 0
	ownUntil := func(t time.Time) (moved bool) {
		for ; i < len(own) && !own[i].At.After(t); i++ {
			x, moved = x.Add(own[i].Amount), true
		}
		return moved
	}
	ownUntil(r.Start)
	x0, k0 := x, int64(0) // the stretch the closed form runs from
	for n := int64(1); n <= ended; n++ {
		// A period's payment follows from the balance at its end: the
		// wallet's own movements during it start a new stretch there.
		if ownUntil(r.Start.Add(time.Duration(n) * p)) {
			x0, k0 = x, n-1
		}
		want := r.value(x0, n-k0, q, cur.Scale).Sub(x)
		amount, done := before[n]
		if !done && !want.IsZero() {
			amount, err = pay(ctx, n, r.transfer(cur.Code, n, want))
			if errors.Is(err, ErrStop) {
				return paid, nil
			}
			if err != nil {
				return paid, fmt.Errorf("allowance %s, period %d: %w", r.Wallet, n, err)
			}
		}
		paid = append(paid, Paid{Period: n, Amount: amount, Key: Key(r.Wallet, r.Version, n), New: !done && !amount.IsZero()})
		x = x.Add(amount)
		if !amount.Equal(want) {
			// A short decay (the wallet had spent what it was to give
			// back): the next periods go on from what is left.
			x0, k0 = x, n
		}
	}
	return paid, nil
}

// transfer is period n's payment of amount: minted into the wallet, or,
// negative, returned from it up to what it has.
func (r Rule) transfer(code currency.Code, n int64, amount decimal.Decimal) currency.Transfer {
	t := currency.Transfer{Key: Key(r.Wallet, r.Version, n), From: currency.IssuanceID(code), To: r.Wallet, Amount: amount,
		Memo: fmt.Sprintf("allowance, period %d", n)}
	if amount.IsNegative() {
		t.From, t.To, t.Amount, t.UpTo, t.Memo = r.Wallet, currency.IssuanceID(code), amount.Neg(), true, fmt.Sprintf("allowance decay, period %d", n)
	}
	return t
}

// ledgerPayer applies each payment to l.
func ledgerPayer(l currency.Ledger, wallet currency.AccountID) Payer {
	return func(ctx context.Context, _ int64, t currency.Transfer) (decimal.Decimal, error) {
		res, err := currency.Do(ctx, l, t)
		if err != nil {
			return decimal.Zero, err
		}
		return Moved(res, wallet), nil
	}
}

// Moved is what a result moved into wallet, less what it moved out.
func Moved(res currency.Result, wallet currency.AccountID) decimal.Decimal {
	net := decimal.Zero
	for _, m := range res.Movements {
		switch wallet {
		case m.To:
			net = net.Add(m.Amount)
		case m.From:
			net = net.Sub(m.Amount)
		}
	}
	return net
}

// statement reads a wallet's whole statement.
func statement(ctx context.Context, l currency.Ledger, id currency.AccountID) ([]currency.Entry, error) {
	var all []currency.Entry
	var after int64
	for {
		es, err := l.Statement(ctx, id, after, 1000)
		if err != nil {
			return nil, fmt.Errorf("allowance %s: statement: %w", id, err)
		}
		all = append(all, es...)
		if len(es) < 1000 {
			return all, nil
		}
		after = es[len(es)-1].Seq
	}
}
