package treasury

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

const settingTopUp = "topup"

// TopUp tops a wallet up from its parent's (its project's budget) when
// its money falls below Below: back up to To.
type TopUp struct {
	Wallet currency.AccountID `json:"wallet"`
	Below  decimal.Decimal    `json:"below"`
	To     decimal.Decimal    `json:"to"`
	// Every is the grid of top-ups: at most one per wallet per step, so
	// that schedulers running at once top up once (a minute if zero).
	Every time.Duration `json:"every"`
}

func (u TopUp) every() time.Duration {
	if u.Every <= 0 {
		return time.Minute
	}
	return u.Every
}

// SetTopUp tops wallet up from its parent wallet whenever a scheduler
// (RunTopUps) finds it below below: back up to to. A to of zero removes it.
func (t *Treasury) SetTopUp(ctx context.Context, actor string, u TopUp, key string) (Action, error) {
	op := "treasury." + KindTopUpSet
	value := ""
	if u.To.IsPositive() {
		acc, err := t.l.Account(ctx, u.Wallet)
		if err != nil {
			return Action{}, fmt.Errorf("top-up of %s: %w", u.Wallet, err)
		}
		money, err := t.l.Currency(ctx, acc.Currency)
		if err != nil {
			return Action{}, fmt.Errorf("top-up of %s: %w", u.Wallet, err)
		}
		if err := checkLimits(op, money, bound{"to", u.To}, bound{"below", u.Below}); err != nil {
			return Action{}, err
		}
		switch {
		case acc.Kind != currency.Wallet || acc.Parent == "":
			return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "wallet",
				Message: string(u.Wallet) + " has no parent wallet to be topped up from (open it with --parent)"}
		case u.Below.GreaterThan(u.To):
			return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "below", Message: fmt.Sprintf("a threshold between 0 and the top-up level %s", u.To)}
		case u.Every != 0 && u.Every < time.Second:
			return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "every", Message: "at least a second"}
		}
		b, _ := json.Marshal(u)
		value = string(b)
	}
	return t.commit(ctx, Change{
		Action:  Action{Key: key, Actor: actor, Kind: KindTopUpSet, Target: string(u.Wallet), Request: "topup " + string(u.Wallet) + " " + value},
		Setting: &Setting{Kind: settingTopUp, Name: string(u.Wallet), Value: value},
	})
}

// TopUps lists the top-ups set.
func (t *Treasury) TopUps(ctx context.Context) ([]TopUp, error) {
	ss, err := t.s.Settings(ctx, settingTopUp)
	if err != nil {
		return nil, fmt.Errorf("top-ups: %w", err)
	}
	out := make([]TopUp, 0, len(ss))
	for _, s := range ss {
		var u TopUp
		if err := json.Unmarshal([]byte(s.Value), &u); err != nil {
			return nil, fmt.Errorf("top-up %s: stored %q: %w", s.Name, s.Value, err)
		}
		out = append(out, u)
	}
	return out, nil
}

// ToppedUp is what one top-up did.
type ToppedUp struct {
	Wallet currency.AccountID `json:"wallet"`
	Amount decimal.Decimal    `json:"amount"`
	Key    string             `json:"key"`
	Err    string             `json:"error,omitempty"`
}

// RunTopUps tops up every wallet below its threshold at now, from its
// parent wallet, as actor (a scheduler's name), each as an action in the
// trail under the key topup/<wallet>/<step of the grid>. Whether a wallet
// is below its threshold and by how much it is topped up are decided in
// the transaction that moves the money, from its balance and its top-up
// as they are there: schedulers running at once, in one step or on either
// side of a step's edge, top a wallet up once, and a top-up changed or
// removed meanwhile is the one applied. A parent that cannot pay is
// reported in ToppedUp.Err and tried again the next step.
func (t *Treasury) RunTopUps(ctx context.Context, actor string, now time.Time) ([]ToppedUp, error) {
	ups, err := t.TopUps(ctx)
	if err != nil {
		return nil, err
	}
	var out []ToppedUp
	for _, u := range ups {
		acc, err := t.l.Account(ctx, u.Wallet)
		if err != nil {
			return out, fmt.Errorf("top-up of %s: %w", u.Wallet, err)
		}
		key := fmt.Sprintf("topup/%s/%d", strings.TrimPrefix(string(u.Wallet), "wallet/"), now.UnixNano()/int64(u.every()))
		a, fresh, err := t.commitFresh(ctx, Change{
			Action: Action{Key: key, Actor: actor, Kind: KindTopUp, Target: string(u.Wallet),
				Request: fmt.Sprintf("topup %s from %s", u.Wallet, acc.Parent)},
			Watch: []currency.AccountID{u.Wallet, acc.Parent},
			Plan: func(ctx context.Context, v View, c *Change) error {
				s, found, err := v.Setting(ctx, settingTopUp, string(u.Wallet))
				if err != nil || !found {
					return cmp.Or(err, ErrNoChange)
				}
				var now TopUp
				if err := json.Unmarshal([]byte(s.Value), &now); err != nil {
					return fmt.Errorf("top-up %s: stored %q: %w", s.Name, s.Value, err)
				}
				bal, _, err := v.Balance(ctx, u.Wallet)
				if err != nil {
					return err
				}
				if !bal.LessThan(now.Below) {
					return ErrNoChange
				}
				amount := now.To.Sub(bal)
				c.Action.After["amount"] = amount.String()
				c.Ops = []currency.Op{currency.Transfer{Key: key, From: acc.Parent, To: u.Wallet, Amount: amount, Memo: fmt.Sprintf("top-up below %s", now.Below)}}
				return nil
			},
		})
		if errors.Is(err, ErrNoChange) || err == nil && !fresh {
			continue // not below its threshold, or topped up this step already
		}
		r := ToppedUp{Wallet: u.Wallet, Key: key}
		if err != nil {
			if bourse.ErrorCode(err) == bourse.EInternal || bourse.ErrorCode(err) == bourse.EUnavailable {
				return out, err
			}
			r.Err = err.Error()
		} else if r.Amount, err = decimal.NewFromString(a.After["amount"]); err != nil {
			return out, fmt.Errorf("top-up %s: the trail's amount: %w", key, err)
		}
		out = append(out, r)
	}
	return out, nil
}
