package treasury

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// ConversionRate is the rate at which From's money converts into To's, in
// units of To per unit of From, as the administrators set it (bourse admin
// rate). Each direction has its own (a spread between them is a fee).
type ConversionRate struct {
	From  currency.Code   `json:"from"`
	To    currency.Code   `json:"to"`
	Rate  decimal.Decimal `json:"rate"`
	SetBy string          `json:"set_by"`
	SetAt time.Time       `json:"set_at"`
}

var rates = pairSetting{setting: "rate", action: KindRateSet, noun: "rate", second: "to", same: "a rate is between two currencies"}

// SetRate sets the rate from one currency to another. A rate of zero
// removes it: exchanges that way stop.
func (t *Treasury) SetRate(ctx context.Context, actor string, from, to currency.Code, rate decimal.Decimal, key string) (Action, error) {
	return rates.set(ctx, t, actor, from, to, rate, key)
}

// Rates lists the rates set.
func (t *Treasury) Rates(ctx context.Context) ([]ConversionRate, error) {
	vs, err := rates.list(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]ConversionRate, len(vs))
	for i, v := range vs {
		out[i] = ConversionRate{From: v.first, To: v.second, Rate: v.value, SetBy: v.setBy, SetAt: v.setAt}
	}
	return out, nil
}

// rate is the rate from one currency to another now.
func (t *Treasury) rate(ctx context.Context, from, to currency.Code) (decimal.Decimal, error) {
	r, found, err := rates.get(ctx, t, from, to)
	if err == nil && !found {
		err = notFound("treasury."+KindExchange, "to",
			fmt.Sprintf("no rate from %s to %s: an administrator sets one (bourse admin rate %s %s RATE)", from, to, from, to))
	}
	return r, err
}

// Convert converts amount of owner's money in from into to at the rate
// set now, in one ledger operation (currency.Convert: both legs or
// neither). The owner's wallet in to is opened if it is missing, under the
// same parent as the one in from. The rate used is in the action's After.
func (t *Treasury) Convert(ctx context.Context, actor, owner string, from, to currency.Code, amount decimal.Decimal, key string) (Action, error) {
	rate, err := t.rate(ctx, from, to)
	if err != nil {
		return Action{}, err
	}
	src, err := t.l.Account(ctx, currency.WalletID(from, owner))
	if err != nil {
		return Action{}, fmt.Errorf("exchange: %w", err)
	}
	dst, err := t.walletBeside(ctx, src, owner, to)
	if err != nil {
		return Action{}, fmt.Errorf("exchange: %w", err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindExchange, Target: owner,
			Request: fmt.Sprintf("exchange %s %s of %s into %s", amount, from, owner, to),
			After:   map[string]string{"rate": rate.String()}},
		Ops:   []currency.Op{currency.Convert{Key: key, From: src.ID, To: dst.ID, Amount: amount, Rate: rate}},
		Watch: []currency.AccountID{src.ID, dst.ID},
	})
}

// walletBeside is owner's wallet in cur, beside its wallet src in another
// currency: opened if it is missing, under the same organisation or
// project as src where that has a wallet in cur.
func (t *Treasury) walletBeside(ctx context.Context, src currency.Account, owner string, cur currency.Code) (currency.Account, error) {
	dst := currency.Account{ID: currency.WalletID(cur, owner), Currency: cur, Kind: currency.Wallet}
	if src.Parent != "" {
		p := currency.WalletID(cur, strings.TrimPrefix(string(src.Parent), string(currency.WalletID(src.Currency, ""))))
		if _, err := t.l.Account(ctx, p); err == nil {
			dst.Parent = p
		}
	}
	return t.ensure(ctx, dst)
}

// ensure opens acc if it is missing, and returns it as it is.
func (t *Treasury) ensure(ctx context.Context, acc currency.Account) (currency.Account, error) {
	got, err := t.l.Account(ctx, acc.ID)
	if isNotFound(err) {
		if got, err = t.l.OpenAccount(ctx, acc); err != nil {
			return currency.Account{}, fmt.Errorf("open %s: %w", acc.ID, err)
		}
	}
	return got, err
}
