package treasury

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// A pair setting is a number the administrators set for an ordered pair
// of currencies: a conversion rate (conversion.go) or a sale's price (sale.go).
// Both are kept, listed and looked up the same way; only their words
// differ.
type pairSetting struct {
	setting string // the setting's kind in the store
	action  string // the action that sets it
	noun    string // "rate", "price"
	second  string // the field naming the second currency: "to", "paid_in"
	same    string // why a currency cannot pair with itself
}

// pairValue is one pair's setting.
type pairValue struct {
	first, second currency.Code
	value         decimal.Decimal
	setBy         string
	setAt         time.Time
}

func pairName(first, second currency.Code) string { return string(first) + "/" + string(second) }

// set sets the pair's value; zero removes it.
func (p pairSetting) set(ctx context.Context, t *Treasury, actor string, first, second currency.Code, v decimal.Decimal, key string) (Action, error) {
	name := pairName(first, second)
	for _, c := range []currency.Code{first, second} {
		if _, err := t.l.Currency(ctx, c); err != nil {
			return Action{}, fmt.Errorf("%s %s: %w", p.noun, name, err)
		}
	}
	op := "treasury." + p.action
	switch {
	case first == second:
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: p.second, Message: p.same}
	case v.IsNegative():
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: p.noun,
			Message: fmt.Sprintf("a %s is above zero (or zero to remove it), not %s", p.noun, v)}
	}
	value := ""
	if v.IsPositive() {
		value = v.String()
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: p.action, Target: name,
			Request: fmt.Sprintf("%s %s %s", p.noun, name, v)},
		Setting: &Setting{Kind: p.setting, Name: name, Value: value},
	})
}

// list lists the pairs set.
func (p pairSetting) list(ctx context.Context, t *Treasury) ([]pairValue, error) {
	ss, err := t.s.Settings(ctx, p.setting)
	if err != nil {
		return nil, fmt.Errorf("%ss: %w", p.noun, err)
	}
	out := make([]pairValue, 0, len(ss))
	for _, s := range ss {
		first, second, _ := strings.Cut(s.Name, "/")
		v, err := decimal.NewFromString(s.Value)
		if err != nil {
			return nil, fmt.Errorf("%s %s: stored %q: %w", p.noun, s.Name, s.Value, err)
		}
		out = append(out, pairValue{first: currency.Code(first), second: currency.Code(second), value: v, setBy: s.SetBy, setAt: s.SetAt})
	}
	return out, nil
}

// get is the pair's value now; found is false where none is set.
func (p pairSetting) get(ctx context.Context, t *Treasury, first, second currency.Code) (v decimal.Decimal, found bool, err error) {
	vs, err := p.list(ctx, t)
	if err != nil {
		return decimal.Decimal{}, false, err
	}
	for _, pv := range vs {
		if pv.first == first && pv.second == second {
			return pv.value, true, nil
		}
	}
	return decimal.Decimal{}, false, nil
}
