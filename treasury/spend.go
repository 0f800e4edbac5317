package treasury

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

const settingSpendCap = "spend-cap"

func spendName(owner string, cur currency.Code, p caps.Period) string {
	return string(cur) + "/" + owner + "/" + string(p)
}

type spendJSON struct {
	Limit string `json:"limit"`
	Warn  string `json:"warn"`
}

// SetSpendCap caps what owner (a client, project or organisation: the
// owner of a wallet) may commit in cur per period, warning the client
// whose offer takes it past warn (a share: 0.8 for 80%; zero for no
// warning). A limit of zero removes the cap. The period under way (by the
// treasury's Periods) gets the new limit at once: its budget is brought,
// in the transaction that sets the cap, to the limit less what the period
// has used already (charged or held), never below zero. What the period
// has used is what its budget was ever given less what is left in it,
// read from the ledger there (caps.BudgetTo), so a cap removed and set
// again, or lowered and raised, within a period still counts what the
// period used.
func (t *Treasury) SetSpendCap(ctx context.Context, actor, owner string, cur currency.Code, p caps.Period, limit, warn decimal.Decimal, key string) (Action, error) {
	op := "treasury." + KindSpendCapSet
	money, err := t.l.Currency(ctx, cur)
	if err != nil {
		return Action{}, fmt.Errorf("spend cap: %w", err)
	}
	if err := checkLimits(op, money, bound{"limit", limit}); err != nil {
		return Action{}, err
	}
	switch {
	case !p.Valid():
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "period", Message: fmt.Sprintf("%q: hour, day or month", p)}
	case !caps.SpendCodeFits(cur):
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "currency", Message: "spend caps need a currency code of at most 10 characters"}
	case warn.IsNegative() || warn.GreaterThan(decimal.NewFromInt(1)):
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "warn", Message: "a share between 0 and 1 (0.8 warns at 80%)"}
	}
	if _, err := t.l.Account(ctx, currency.WalletID(cur, owner)); err != nil {
		return Action{}, fmt.Errorf("spend cap of %s: %w", owner, err)
	}
	value := ""
	if limit.IsPositive() {
		b, _ := json.Marshal(spendJSON{Limit: limit.String(), Warn: warn.String()})
		value = string(b)
	}
	// The budget of the period under way, open before the transaction
	// (opening is idempotent), so that the transaction can fill it.
	w := t.periods.Budget(owner, cur, p)
	if err := caps.OpenBudget(ctx, t.l, cur, money.Scale, w); err != nil {
		return Action{}, err
	}
	s := caps.Spend{Owner: owner, Currency: cur, Period: p, Limit: limit, Warn: warn}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindSpendCapSet, Target: spendName(owner, cur, p),
			Request: fmt.Sprintf("spend cap %s %s warn %s", spendName(owner, cur, p), limit, warn)},
		Setting: &Setting{Kind: settingSpendCap, Name: spendName(owner, cur, p), Value: value},
		Watch:   []currency.AccountID{w},
		Plan: func(ctx context.Context, v View, c *Change) error {
			if t.periods.Budget(owner, cur, p) != w {
				return &bourse.Error{Code: bourse.EUnavailable, Op: op, Message: "a new period began while the cap was being set: try again"}
			}
			ops, err := caps.BudgetTo(ctx, v, s, w, key)
			c.Ops = ops
			return err
		},
	})
}

// SpendCapList lists every spend cap.
func (t *Treasury) SpendCapList(ctx context.Context) ([]caps.Spend, error) {
	ss, err := t.s.Settings(ctx, settingSpendCap)
	if err != nil {
		return nil, fmt.Errorf("spend caps: %w", err)
	}
	out := make([]caps.Spend, 0, len(ss))
	for _, s := range ss {
		parts := strings.Split(s.Name, "/")
		var j spendJSON
		if len(parts) != 3 || json.Unmarshal([]byte(s.Value), &j) != nil {
			return nil, fmt.Errorf("spend cap %s: stored %q is not a cap", s.Name, s.Value)
		}
		limit, err1 := decimal.NewFromString(j.Limit)
		warn, err2 := decimal.NewFromString(j.Warn)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("spend cap %s: stored %q is not a cap", s.Name, s.Value)
		}
		out = append(out, caps.Spend{Currency: currency.Code(parts[0]), Owner: parts[1], Period: caps.Period(parts[2]), Limit: limit, Warn: warn})
	}
	return out, nil
}

// SpendUse is a spend cap and its budget in the period under way.
type SpendUse struct {
	caps.Spend
	// Used is charged or held this period; Held the part held by
	// contracts still running.
	Used decimal.Decimal `json:"used"`
	Held decimal.Decimal `json:"held"`
}

// UsedPercent is how much of the cap is used, in percent of its limit,
// to a whole number: 0 where the limit is none.
func (u SpendUse) UsedPercent() decimal.Decimal {
	if !u.Limit.IsPositive() {
		return decimal.Zero
	}
	return u.Used.Mul(decimal.NewFromInt(100)).Div(u.Limit).Round(0)
}

// SpendUses lists every spend cap and spend rate with what is used of it
// now (of a bucket: its capacity less what is left in it).
func (t *Treasury) SpendUses(ctx context.Context) ([]SpendUse, error) {
	all, err := t.spendCaps(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]SpendUse, 0, len(all))
	for _, c := range all {
		u := SpendUse{Spend: c}
		bal, err := t.l.Balance(ctx, t.periods.Budget(c.Owner, c.Currency, c.Period))
		switch {
		case isNotFound(err): // nothing this period yet
		case err != nil:
			return nil, err
		default:
			u.Used, u.Held = c.Limit.Sub(bal.Available), bal.Held
		}
		out = append(out, u)
	}
	return out, nil
}

// spendCaps is every spend cap and spend rate, as the exchange enforces
// them.
func (t *Treasury) spendCaps(ctx context.Context) ([]caps.Spend, error) {
	all, err := t.SpendCapList(ctx)
	if err != nil {
		return nil, err
	}
	rates, err := t.SpendRates(ctx)
	if err != nil {
		return nil, err
	}
	return append(all, rateCaps(rates)...), nil
}

// SpendCaps is the treasury's caps as the exchange asks for them, read
// from the store at most once per ttl by the treasury's Periods' clock
// (every time for a ttl of zero): a cap set takes up to ttl to reach
// admission (the budget of the period under way changes at once).
func (t *Treasury) SpendCaps(ttl time.Duration) caps.Limits {
	return &spendCache{t: t, ttl: ttl}
}

type spendCache struct {
	t   *Treasury
	ttl time.Duration

	mu      sync.Mutex
	read    time.Time
	byOwner map[string][]caps.Spend // currency/owner → caps
}

func (c *spendCache) SpendCaps(ctx context.Context, owner string, cur currency.Code) ([]caps.Spend, error) {
	return c.caps(ctx, owner, cur, false)
}

// FreshSpendCaps reads the store whatever the cache holds.
func (c *spendCache) FreshSpendCaps(ctx context.Context, owner string, cur currency.Code) ([]caps.Spend, error) {
	return c.caps(ctx, owner, cur, true)
}

func (c *spendCache) caps(ctx context.Context, owner string, cur currency.Code, fresh bool) ([]caps.Spend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.t.periods.Now()
	if fresh || c.byOwner == nil || c.ttl <= 0 || now.Sub(c.read) > c.ttl {
		all, err := c.t.spendCaps(ctx)
		if err != nil {
			return nil, err
		}
		c.byOwner, c.read = map[string][]caps.Spend{}, now
		for _, sc := range all {
			k := string(sc.Currency) + "/" + sc.Owner
			c.byOwner[k] = append(c.byOwner[k], sc)
		}
	}
	return c.byOwner[string(cur)+"/"+owner], nil
}
