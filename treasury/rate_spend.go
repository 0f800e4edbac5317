package treasury

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// A spend rate is a token bucket on what an owner (a client, project or
// organisation) may commit (caps.Bucket): its budget, a wallet in
// SPEND-<currency> that never renews (caps.Bucketed), holds at most Capacity
// and is refilled at PerHour, a step at a time, by RunSpendRates (the
// exchange daemon runs it; schedulers running at once refill each step
// once). Offers reserve their prepayments from it in the escrow's
// transaction as from any spend cap, and settlement takes the charge and
// gives back the rest. The treasury keeps its settings here; what a
// change or a refill moves is caps.Bucket's.

const settingSpendRate = "spend-rate"

// SpendBucket is a token bucket's settings and the last step refilled.
type SpendBucket struct {
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

func (r SpendBucket) name() string { return string(r.Currency) + "/" + r.Owner }

// bucket is the bucket r sets.
func (r SpendBucket) bucket() caps.Bucket {
	return caps.Bucket{Owner: r.Owner, Currency: r.Currency, Capacity: r.Capacity, PerHour: r.PerHour, Step: r.Step}
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
	case !caps.SpendCodeFits(cur):
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "currency", Message: "spend rates need a currency code of at most 10 characters"}
	case capacity.IsPositive() && !perHour.IsPositive():
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "per_hour", Message: "a bucket refills at a rate above zero"}
	case warn.IsNegative() || warn.GreaterThan(decimal.NewFromInt(1)):
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "warn", Message: "a share between 0 and 1 (0.8 warns at 80%)"}
	}
	if _, err := t.l.Account(ctx, currency.WalletID(cur, owner)); err != nil {
		return Action{}, fmt.Errorf("spend rate of %s: %w", owner, err)
	}
	r := SpendBucket{Owner: owner, Currency: cur, Capacity: capacity, PerHour: perHour, Warn: warn}
	if err := caps.OpenBudget(ctx, t.l, cur, money.Scale, r.bucket().Wallet()); err != nil {
		return Action{}, err
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindSpendRateSet, Target: r.name(),
			Request: fmt.Sprintf("spend rate %s capacity %s per hour %s warn %s", r.name(), capacity, perHour, warn)},
		Watch: []currency.AccountID{r.bucket().Wallet()},
		Plan: func(ctx context.Context, v View, c *Change) error {
			old, err := readSpendRate(ctx, v, r.name())
			if err != nil {
				return err
			}
			set := r
			set.Refilled = set.bucket().StepAt(t.periods.Now())
			if old.Capacity.IsPositive() {
				set.Refilled = old.Refilled // the steps since then are still due
			}
			c.Ops = r.bucket().Change(old.Capacity, key)
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
// SpendBucket where there is none.
func readSpendRate(ctx context.Context, v View, name string) (SpendBucket, error) {
	s, found, err := v.Setting(ctx, settingSpendRate, name)
	if err != nil || !found {
		return SpendBucket{}, err
	}
	var r SpendBucket
	if err := json.Unmarshal([]byte(s.Value), &r); err != nil {
		return SpendBucket{}, fmt.Errorf("spend rate %s: stored %q: %w", name, s.Value, err)
	}
	return r, nil
}

// SpendRates lists the buckets.
func (t *Treasury) SpendRates(ctx context.Context) ([]SpendBucket, error) {
	ss, err := t.s.Settings(ctx, settingSpendRate)
	if err != nil {
		return nil, fmt.Errorf("spend rates: %w", err)
	}
	out := make([]SpendBucket, 0, len(ss))
	for _, s := range ss {
		var r SpendBucket
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
		n := r.bucket().StepAt(now)
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
			Watch:  []currency.AccountID{r.bucket().Wallet()},
			Plan: func(ctx context.Context, v View, c *Change) error {
				set, err := readSpendRate(ctx, v, r.name())
				if err != nil {
					return err
				}
				if !set.Capacity.IsPositive() || n <= set.Refilled {
					return ErrNoChange // removed, or refilled this far by another run
				}
				b := set.bucket()
				bal, _, err := v.Balance(ctx, b.Wallet())
				if err != nil {
					return err
				}
				steps := n - set.Refilled
				amount, ops := b.Refill(bal, steps, money.Scale, key)
				next := set
				next.Refilled = n
				value, _ := json.Marshal(next)
				c.Setting = &Setting{Kind: settingSpendRate, Name: r.name(), Value: string(value)}
				c.Ops = ops
				c.Action.After["amount"] = amount.String()
				done = Refill{Bucket: b.Wallet(), Amount: amount, Steps: steps}
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
func rateCaps(rs []SpendBucket) []caps.Spend {
	out := make([]caps.Spend, 0, len(rs))
	for _, r := range rs {
		out = append(out, caps.Spend{Owner: r.Owner, Currency: r.Currency, Period: caps.Bucketed, Limit: r.Capacity, Warn: r.Warn})
	}
	return out
}
