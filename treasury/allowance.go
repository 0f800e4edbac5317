package treasury

import (
	"context"
	"encoding/json"
	"fmt"
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
// exist. The scheduler (`bourse admin allowance run`) pays it from then
// on; a replaced rule starts its grid afresh from its Start.
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
	v := encodeRule(r)
	return t.commit(ctx, Change{
		Action:  Action{Key: key, Actor: actor, Kind: KindAllowanceSet, Target: string(r.Wallet), Request: "allowance " + v},
		Setting: &Setting{Kind: settingAllowance, Name: string(r.Wallet), Value: v},
	})
}

// RemoveAllowance stops a wallet's allowance; what it was paid stays.
func (t *Treasury) RemoveAllowance(ctx context.Context, actor string, wallet currency.AccountID, key string) (Action, error) {
	return t.commit(ctx, Change{
		Action:  Action{Key: key, Actor: actor, Kind: KindAllowanceRemove, Target: string(wallet), Request: "allowance remove " + string(wallet)},
		Setting: &Setting{Kind: settingAllowance, Name: string(wallet)},
	})
}

// Allowances lists the allowances set, by wallet.
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
		out = append(out, r)
	}
	return out, nil
}

// PayAllowances pays every allowance what it is due at now
// (allowance.Accrue, idempotent per period), and returns what each paid.
// An allowance that fails does not stop the others; the first error is
// returned after all have run.
func (t *Treasury) PayAllowances(ctx context.Context, now time.Time) (map[currency.AccountID][]allowance.Paid, error) {
	rules, err := t.Allowances(ctx)
	if err != nil {
		return nil, err
	}
	out := map[currency.AccountID][]allowance.Paid{}
	var first error
	for _, r := range rules {
		paid, err := allowance.Accrue(ctx, t.l, r, now)
		out[r.Wallet] = paid
		if err != nil && first == nil {
			first = fmt.Errorf("allowance of %s: %w", r.Wallet, err)
		}
	}
	return out, first
}
