package treasury

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// A spend rate is a token bucket on what an owner (a client, project or
// organisation) may commit: its budget, a wallet in SPEND-<currency> that
// never renews (exchange.Rate), holds at most Capacity and is refilled at
// PerHour, a step at a time, by RunSpendRates (the exchange daemon runs
// it; schedulers running at once refill each step once). Offers reserve
// their prepayments from it in the escrow's transaction as from any spend
// cap, and settlement takes the charge and gives back the rest.

const settingSpendRate = "spend-rate"

// SpendRate is a token bucket's settings and the last step refilled.
type SpendRate struct {
	Owner    string          `json:"owner"`
	Currency currency.Code   `json:"currency"`
	Capacity decimal.Decimal `json:"capacity"`
	PerHour  decimal.Decimal `json:"per_hour"`
	Warn     decimal.Decimal `json:"warn"`
	// Step is the refill's grid, a minute if zero; Refilled the last step
	// of it that was paid.
	Step     time.Duration `json:"step"`
	Refilled int64         `json:"refilled"`
}

func (r SpendRate) step() time.Duration {
	if r.Step <= 0 {
		return time.Minute
	}
	return r.Step
}

func (r SpendRate) name() string { return string(r.Currency) + "/" + r.Owner }

func (r SpendRate) bucket() currency.AccountID {
	return exchange.SpendWallet(r.Owner, r.Currency, exchange.Rate, time.Time{})
}

// SetSpendRate gives owner's spending in cur a token bucket of capacity,
// refilled at perHour, warning the client whose offer takes it past warn
// of it. It starts full. A capacity of zero removes it. A new capacity
// changes the bucket at once by the difference from the capacity set
// (never below what is held), both read in the transaction that moves
// it, so that two administrators at once, or a refill meanwhile, neither
// lose nor double a change.
func (t *Treasury) SetSpendRate(ctx context.Context, actor, owner string, cur currency.Code, capacity, perHour, warn decimal.Decimal, key string) (Action, error) {
	op := "treasury." + KindSpendRateSet
	money, err := t.l.Currency(ctx, cur)
	if err != nil {
		return Action{}, fmt.Errorf("spend rate: %w", err)
	}
	if err := checkLimits(op, money, bound{"capacity", capacity}, bound{"per_hour", perHour}); err != nil {
		return Action{}, err
	}
	switch {
	case len(exchange.SpendCode(cur)) > 16:
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "currency", Message: "spend rates need a currency code of at most 10 characters"}
	case capacity.IsPositive() && !perHour.IsPositive():
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "per_hour", Message: "a bucket refills at a rate above zero"}
	case warn.IsNegative() || warn.GreaterThan(decimal.NewFromInt(1)):
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "warn", Message: "a share between 0 and 1 (0.8 warns at 80%)"}
	}
	if _, err := t.l.Account(ctx, currency.WalletID(cur, owner)); err != nil {
		return Action{}, fmt.Errorf("spend rate of %s: %w", owner, err)
	}
	r := SpendRate{Owner: owner, Currency: cur, Capacity: capacity, PerHour: perHour, Warn: warn}
	if err := t.openBucket(ctx, r, money.Scale); err != nil {
		return Action{}, err
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindSpendRateSet, Target: r.name(),
			Request: fmt.Sprintf("spend rate %s capacity %s per hour %s warn %s", r.name(), capacity, perHour, warn)},
		Watch: []currency.AccountID{r.bucket()},
		Plan: func(ctx context.Context, v View, c *Change) error {
			old, err := readSpendRate(ctx, v, r.name())
			if err != nil {
				return err
			}
			set := r
			set.Refilled = v.Now().UnixNano() / int64(set.step())
			if old.Capacity.IsPositive() {
				set.Refilled = old.Refilled // the steps since then are still due
			}
			// From the old capacity (zero for a new bucket, which so
			// starts full) to the new; down as far as what is not held.
			iss := currency.IssuanceID(exchange.SpendCode(cur))
			switch delta := capacity.Sub(old.Capacity); {
			case delta.IsPositive():
				c.Ops = []currency.Op{currency.Transfer{Key: key + "/bucket", From: iss, To: r.bucket(), Amount: delta, Memo: "spend rate of " + owner}}
			case delta.IsNegative():
				c.Ops = []currency.Op{currency.Transfer{Key: key + "/bucket", From: r.bucket(), To: iss, Amount: delta.Neg(), UpTo: true, Memo: "spend rate of " + owner}}
			}
			c.Setting = &Setting{Kind: settingSpendRate, Name: r.name()}
			if capacity.IsPositive() {
				b, _ := json.Marshal(set)
				c.Setting.Value = string(b)
			}
			return nil
		},
	})
}

// readSpendRate is the bucket name's settings as v reads them; the zero
// SpendRate where there is none.
func readSpendRate(ctx context.Context, v View, name string) (SpendRate, error) {
	s, found, err := v.Setting(ctx, settingSpendRate, name)
	if err != nil || !found {
		return SpendRate{}, err
	}
	var r SpendRate
	if err := json.Unmarshal([]byte(s.Value), &r); err != nil {
		return SpendRate{}, fmt.Errorf("spend rate %s: stored %q: %w", name, s.Value, err)
	}
	return r, nil
}

// openBucket makes the bucket's currency, wallet and spent account.
func (t *Treasury) openBucket(ctx context.Context, r SpendRate, scale int32) error {
	return t.openSpend(ctx, r.Currency, scale, r.bucket())
}

// openSpend makes the unit currency of cur's spend budgets, its spent
// account and the budget w, where they are missing.
func (t *Treasury) openSpend(ctx context.Context, cur currency.Code, scale int32, w currency.AccountID) error {
	code := exchange.SpendCode(cur)
	if err := t.l.CreateCurrency(ctx, currency.Currency{Code: code, Scale: scale}); err != nil {
		return fmt.Errorf("spend currency %s: %w", code, err)
	}
	for _, a := range []currency.Account{
		{ID: exchange.SpentID(cur), Currency: code, Kind: currency.Revenue},
		{ID: w, Currency: code, Kind: currency.Wallet},
	} {
		if _, err := t.l.OpenAccount(ctx, a); err != nil {
			return fmt.Errorf("spend budget %s: %w", a.ID, err)
		}
	}
	return nil
}

// SpendRates lists the buckets.
func (t *Treasury) SpendRates(ctx context.Context) ([]SpendRate, error) {
	ss, err := t.s.Settings(ctx, settingSpendRate)
	if err != nil {
		return nil, fmt.Errorf("spend rates: %w", err)
	}
	out := make([]SpendRate, 0, len(ss))
	for _, s := range ss {
		var r SpendRate
		if err := json.Unmarshal([]byte(s.Value), &r); err != nil {
			return nil, fmt.Errorf("spend rate %s: stored %q: %w", s.Name, s.Value, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// Refill is what RunSpendRates put in one bucket.
type Refill struct {
	Bucket currency.AccountID `json:"bucket"`
	Amount decimal.Decimal    `json:"amount"`
	Steps  int64              `json:"steps"`
}

// RunSpendRates refills every bucket for the steps that have passed since
// its last refill, up to its capacity, each bucket's refill one action
// under the key of the step it reaches. The steps due, the room left and
// the bucket's settings are read in the transaction that refills it, and
// only the step reached is written back: two runs at once, on either side
// of a step's edge, refill a bucket once, and a capacity an administrator
// changed meanwhile is the one the refill keeps to (and keeps).
func (t *Treasury) RunSpendRates(ctx context.Context, actor string, now time.Time) ([]Refill, error) {
	rs, err := t.SpendRates(ctx)
	if err != nil {
		return nil, err
	}
	var out []Refill
	for _, r := range rs {
		n := now.UnixNano() / int64(r.step())
		if n <= r.Refilled {
			continue
		}
		money, err := t.l.Currency(ctx, r.Currency)
		if err != nil {
			return out, err
		}
		key := fmt.Sprintf("spend-rate/%s/%s/%d", r.Currency, r.Owner, n)
		var done Refill
		_, fresh, err := t.commitFresh(ctx, Change{
			Action: Action{Key: key, Actor: actor, Kind: KindSpendRateRefill, Target: r.name(), Request: fmt.Sprintf("refill %s to step %d", r.name(), n)},
			Watch:  []currency.AccountID{r.bucket()},
			Plan: func(ctx context.Context, v View, c *Change) error {
				set, err := readSpendRate(ctx, v, r.name())
				if err != nil {
					return err
				}
				if !set.Capacity.IsPositive() || n <= set.Refilled {
					return ErrNoChange // removed, or refilled this far by another run
				}
				bal, _, err := v.Balance(ctx, r.bucket())
				if err != nil {
					return err
				}
				steps := n - set.Refilled
				// per hour × the time the steps span, in exact decimals.
				due := set.PerHour.Mul(decimal.NewFromInt(steps * int64(set.step()))).Div(decimal.NewFromInt(int64(time.Hour))).RoundDown(money.Scale)
				// Up to the capacity of what is left to reserve: what
				// running contracts hold is not counted, or a long
				// contract would stop the refill; so their refunds can take
				// a bucket past its capacity for a while, and it refills
				// no more until it is below.
				amount := decimal.Max(decimal.Zero, decimal.Min(due, set.Capacity.Sub(bal)))
				next := set
				next.Refilled = n
				value, _ := json.Marshal(next)
				c.Setting = &Setting{Kind: settingSpendRate, Name: r.name(), Value: string(value)}
				if amount.IsPositive() {
					c.Ops = []currency.Op{currency.Transfer{Key: key, From: currency.IssuanceID(exchange.SpendCode(r.Currency)), To: r.bucket(), Amount: amount,
						Memo: fmt.Sprintf("refill of %d steps", steps)}}
				}
				c.Action.After["amount"] = amount.String()
				done = Refill{Bucket: r.bucket(), Amount: amount, Steps: steps}
				return nil
			},
		})
		switch {
		case errors.Is(err, ErrNoChange):
			continue
		case err != nil:
			return out, err
		}
		if fresh { // this run refilled it, not an earlier one under the key
			out = append(out, done)
		}
	}
	return out, nil
}

// rateCaps are the buckets as the exchange's spend caps.
func rateCaps(rs []SpendRate) []exchange.SpendCap {
	out := make([]exchange.SpendCap, 0, len(rs))
	for _, r := range rs {
		out = append(out, exchange.SpendCap{Owner: r.Owner, Currency: r.Currency, Period: exchange.Rate, Limit: r.Capacity, Warn: r.Warn})
	}
	return out
}
