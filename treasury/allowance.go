package treasury

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
)

const settingAllowance = "allowance"

// ruleJSON is how a rule is stored: decimals as text, the period in
// seconds, the start in RFC 3339.
type ruleJSON struct {
	Wallet currency.AccountID `json:"wallet"`
	A      string             `json:"a"`
	B      string             `json:"b"`
	Period float64            `json:"period_s"`
	Start  time.Time          `json:"start"`
}

func encodeRule(r allowance.Rule) string {
	b, _ := json.Marshal(ruleJSON{Wallet: r.Wallet, A: r.A.String(), B: r.B.String(), Period: r.Period.Seconds(), Start: r.Start.UTC()})
	return string(b)
}

func decodeRule(s string) (allowance.Rule, error) {
	var j ruleJSON
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return allowance.Rule{}, err
	}
	a, err := decimal.NewFromString(j.A)
	if err != nil {
		return allowance.Rule{}, fmt.Errorf("a: %w", err)
	}
	b, err := decimal.NewFromString(j.B)
	if err != nil {
		return allowance.Rule{}, fmt.Errorf("b: %w", err)
	}
	return allowance.Rule{Wallet: j.Wallet, A: a, B: b, Period: time.Duration(j.Period * float64(time.Second)).Round(time.Millisecond), Start: j.Start}, nil
}

// SetAllowance sets (or replaces) the allowance of r.Wallet, which must
// exist. The scheduler (PayAllowances) pays it from then on, each period
// under a key of the rule's version, so that a replacement never finds
// its predecessor's payments under its own keys.
//
// A wallet's first rule may start in the past: the periods since its
// Start are paid at the next run. A rule set after another (a replacement,
// or a rule set again after a removal) starts no earlier than it is set,
// by the store's clock, so that no stretch of time is paid by two rules;
// the rule it replaces is paid first for every period that has ended.
func (t *Treasury) SetAllowance(ctx context.Context, actor string, r allowance.Rule, key string) (Action, error) {
	if err := r.Validate(); err != nil {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: "treasury." + KindAllowanceSet, Field: "rule", Message: err.Error()}
	}
	if r.Period != 0 && r.Period < time.Second {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: "treasury." + KindAllowanceSet, Field: "period", Message: "at least a second"}
	}
	acc, err := t.l.Account(ctx, r.Wallet)
	if err != nil {
		return Action{}, fmt.Errorf("allowance of %s: %w", r.Wallet, err)
	}
	if acc.Kind != currency.Wallet {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: "treasury." + KindAllowanceSet, Field: "wallet", Message: string(r.Wallet) + " is not a wallet"}
	}
	if r.A.GreaterThanOrEqual(currency.MaxAmount) {
		// a is a rate, not an amount of the currency's scale: only its
		// bound is checked.
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: "treasury." + KindAllowanceSet, Field: "a",
			Message: "an allowance of " + r.A.String() + " per hour is not below 10^18, the bound of every amount and balance"}
	}
	if err := t.payUp(ctx, r); err != nil {
		return Action{}, err
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindAllowanceSet, Target: string(r.Wallet), Request: "allowance " + encodeRule(r)},
		Plan: func(ctx context.Context, v View, c *Change) error {
			old, _, err := v.Setting(ctx, settingAllowance, string(r.Wallet))
			if err != nil {
				return err
			}
			set := r
			if now := v.Now().UTC().Truncate(time.Second); old.Version > 0 && set.Start.Before(now) {
				set.Start = now
			}
			c.Setting = &Setting{Kind: settingAllowance, Name: string(r.Wallet), Value: encodeRule(set)}
			return nil
		},
	})
}

// RemoveAllowance stops a wallet's allowance; what it was paid stays, and
// every period that has ended is paid first.
func (t *Treasury) RemoveAllowance(ctx context.Context, actor string, wallet currency.AccountID, key string) (Action, error) {
	if err := t.payUp(ctx, allowance.Rule{Wallet: wallet}); err != nil {
		return Action{}, err
	}
	return t.commit(ctx, Change{
		Action:  Action{Key: key, Actor: actor, Kind: KindAllowanceRemove, Target: string(wallet), Request: "allowance remove " + string(wallet)},
		Setting: &Setting{Kind: settingAllowance, Name: string(wallet)},
	})
}

// payUp pays the rule of next.Wallet, if it has one other than next, for
// the periods that have ended by the store's clock, before next replaces
// it (or, with only a wallet, before it is removed). The same rule set
// again, as a rules file run from cron does, pays nothing here.
func (t *Treasury) payUp(ctx context.Context, next allowance.Rule) error {
	rules, err := t.Allowances(ctx)
	if err != nil {
		return err
	}
	for _, r := range rules {
		same := r
		same.Version = 0
		if r.Wallet != next.Wallet || encodeRule(same) == encodeRule(next) {
			continue
		}
		if _, err := allowance.AccrueWith(ctx, t.l, r, t.s.Now(), t.payer(r)); err != nil {
			return fmt.Errorf("allowance of %s, before it changes: %w", r.Wallet, err)
		}
	}
	return nil
}

// Allowances lists the allowances set, by wallet, each with its version.
func (t *Treasury) Allowances(ctx context.Context) ([]allowance.Rule, error) {
	ss, err := t.s.Settings(ctx, settingAllowance)
	if err != nil {
		return nil, fmt.Errorf("allowances: %w", err)
	}
	out := make([]allowance.Rule, 0, len(ss))
	for _, s := range ss {
		r, err := decodeRule(s.Value)
		if err != nil {
			return nil, fmt.Errorf("allowance of %s: stored %q: %w", s.Name, s.Value, err)
		}
		r.Version = s.Version
		out = append(out, r)
	}
	return out, nil
}

// PayAllowances pays every allowance what it is due at now
// (allowance.AccrueWith, once per period), and returns what each paid.
// Each payment is a ledger transfer under the key of its rule's version
// and period (the rule is in the trail; the payments are on the wallet's
// statement, not in the trail), committed only while its rule's version
// is the one set and only for a period that has ended by the store's
// clock: a run with a
// clock ahead pays nothing early, and a run that races a replacement pays
// the old rule nothing past it. An allowance that fails does not stop the
// others; the first error is returned after all have run.
func (t *Treasury) PayAllowances(ctx context.Context, now time.Time) (map[currency.AccountID][]allowance.Paid, error) {
	rules, err := t.Allowances(ctx)
	if err != nil {
		return nil, err
	}
	out := map[currency.AccountID][]allowance.Paid{}
	var first error
	for _, r := range rules {
		paid, err := allowance.AccrueWith(ctx, t.l, r, now, t.payer(r))
		out[r.Wallet] = paid
		if err != nil && first == nil {
			first = fmt.Errorf("allowance of %s: %w", r.Wallet, err)
		}
	}
	return out, first
}

// payer commits r's payments in the trail, each in a transaction that
// checks that r's version is still the one set and that its period has
// ended by the store's clock. The amount of a decay is decided by the
// ledger in that transaction (up to what the wallet has).
func (t *Treasury) payer(r allowance.Rule) allowance.Payer {
	return func(ctx context.Context, n int64, tr currency.Transfer) (decimal.Decimal, error) {
		end := r.Start.Add(time.Duration(n) * cmp.Or(r.Period, time.Hour))
		_, err := t.commit(ctx, Change{
			Action: Action{Key: tr.Key, Actor: "scheduler", Kind: KindAllowance, Target: string(r.Wallet), Memo: tr.Memo,
				Request: fmt.Sprintf("allowance %s version %d period %d", r.Wallet, r.Version, n)},
			Unrecorded: true,
			Plan: func(ctx context.Context, v View, c *Change) error {
				s, found, err := v.Setting(ctx, settingAllowance, string(r.Wallet))
				switch {
				case err != nil:
					return err
				case !found || s.Version != r.Version, end.After(v.Now()):
					return allowance.ErrStop
				}
				c.Ops = []currency.Op{tr}
				return nil
			},
		})
		if err != nil {
			return decimal.Zero, err
		}
		// The payment is made (now or before): its transfer's first
		// answer says what it moved.
		res, err := currency.Do(ctx, t.l, tr)
		if err != nil {
			return decimal.Zero, err
		}
		return allowance.Moved(res, r.Wallet), nil
	}
}

// Described is a with each allowance rule it noted (the setting's value
// before and after, JSON as the trail keeps it) written by describe,
// for a person; a value that does not read as a rule stays as it is.
// The trail and its JSON keep the rule as it was stored.
func (a Action) Described(describe func(allowance.Rule) string) Action {
	rewrite := func(m map[string]string) map[string]string {
		v, ok := m[settingAllowance]
		if !ok {
			return m
		}
		r, err := decodeRule(v)
		if err != nil {
			return m
		}
		out := maps.Clone(m)
		out[settingAllowance] = describe(r)
		return out
	}
	a.Before, a.After = rewrite(a.Before), rewrite(a.After)
	return a
}
