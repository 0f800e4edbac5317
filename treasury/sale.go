package treasury

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// Price is what one unit of Sold costs in PaidIn at a fixed-rate sale, as
// the administrators of Sold set it: the policy of selling a currency for
// real money (or for another currency) at a fixed exchange rate. Real
// money paid outside the ledger enters it as a currency of its own (EUR,
// say), granted into the buyer's wallet when the payment arrives; the
// sale then turns it into Sold.
type Price struct {
	Sold   currency.Code   `json:"sold"`
	PaidIn currency.Code   `json:"paid_in"`
	Price  decimal.Decimal `json:"price"`
	SetBy  string          `json:"set_by"`
	SetAt  time.Time       `json:"set_at"`
}

var prices = pairSetting{setting: "price", action: KindPriceSet, noun: "price", second: "paid_in",
	same: "a currency is sold for another one, not for itself"}

// ProceedsOwner owns the wallets, one per currency paid in, where sales
// of sold are paid: "sales:CRED" (a name no party can have, as party ids
// have no colon). Administrators take the proceeds out as from any
// wallet (bourse admin burn sales:CRED --currency EUR).
func ProceedsOwner(sold currency.Code) string { return "sales:" + string(sold) }

// ProceedsID is the wallet in paidIn where sales of sold are paid.
func ProceedsID(sold, paidIn currency.Code) currency.AccountID {
	return currency.WalletID(paidIn, ProceedsOwner(sold))
}

// SetPrice sets the price of one unit of sold in paidIn. A price of zero
// removes it: sales that way stop.
func (t *Treasury) SetPrice(ctx context.Context, actor string, sold, paidIn currency.Code, price decimal.Decimal, key string) (Action, error) {
	return prices.set(ctx, t, actor, sold, paidIn, price, key)
}

// Prices lists the prices set.
func (t *Treasury) Prices(ctx context.Context) ([]Price, error) {
	vs, err := prices.list(ctx, t)
	if err != nil {
		return nil, err
	}
	out := make([]Price, len(vs))
	for i, v := range vs {
		out[i] = Price{Sold: v.first, PaidIn: v.second, Price: v.value, SetBy: v.setBy, SetAt: v.setAt}
	}
	return out, nil
}

// price is the price of sold in paidIn now.
func (t *Treasury) price(ctx context.Context, sold, paidIn currency.Code) (decimal.Decimal, error) {
	p, found, err := prices.get(ctx, t, sold, paidIn)
	if err == nil && !found {
		err = notFound("treasury."+KindSale, "paid_in",
			fmt.Sprintf("%s is not sold for %s: an administrator sets a price (bourse admin price set %s %s PRICE)", sold, paidIn, sold, paidIn))
	}
	return p, err
}

// SaleCost is what amount costs at price in a currency of scale decimal
// places: rounded up, in the seller's favour, so that a sale never gives
// away the part of a cent the price asks for.
func SaleCost(amount, price decimal.Decimal, scale int32) decimal.Decimal {
	return amount.Mul(price).RoundCeil(scale)
}

// payLeg ends the ledger key of a sale's payment; the mint has the
// action's own key, so that the supply's history shows it.
const payLeg = "/pay"

// Sell sells amount of sold to buyer at the price set now, in one action:
// one ledger transaction under key with two legs, both or neither. The
// buyer's wallet in paidIn pays the cost, amount × price rounded up to
// paidIn's scale (in the seller's favour, see SaleCost), into the sale's
// proceeds wallet (ProceedsID, opened if missing), and amount of sold is
// minted into the buyer's wallet in sold (opened if missing, under the
// same organisation or project as its wallet in paidIn). Unlike an
// exchange, which takes the money paid out of its supply, a sale keeps
// it: the seller is paid. The price and the cost are in the action's
// After.
//
// A buyer who cannot pay gets the ledger's insufficient_funds, and
// nothing of the sale is kept, not the mint, not the key (the wallets
// opened for it stay, empty). The same key again is the first sale, even
// after the price changed (though not once the price is removed: like
// Exchange's rate, it is read before the trail); with another buyer,
// amount or currency it is an idempotency_conflict.
func (t *Treasury) Sell(ctx context.Context, actor, buyer string, sold, paidIn currency.Code, amount decimal.Decimal, key string) (Action, error) {
	op := "treasury." + KindSale
	if len(key) > currency.MaxIDLen-len(payLeg) {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "key", Message: fmt.Sprintf("a sale's key is at most %d bytes", currency.MaxIDLen-len(payLeg))}
	}
	price, err := t.price(ctx, sold, paidIn)
	if err != nil {
		return Action{}, err
	}
	sc, err := t.l.Currency(ctx, sold)
	if err != nil {
		return Action{}, fmt.Errorf("sale: %w", err)
	}
	pc, err := t.l.Currency(ctx, paidIn)
	if err != nil {
		return Action{}, fmt.Errorf("sale: %w", err)
	}
	if err := sc.CheckAmount("amount", amount); err != nil {
		var be *bourse.Error
		if errors.As(err, &be) {
			be.Op = op
		}
		return Action{}, err
	}
	cost := SaleCost(amount, price, pc.Scale)
	src, err := t.l.Account(ctx, currency.WalletID(paidIn, buyer))
	if err != nil {
		return Action{}, fmt.Errorf("sale: %w", err)
	}
	dst, err := t.walletBeside(ctx, src, buyer, sold)
	if err != nil {
		return Action{}, fmt.Errorf("sale: %w", err)
	}
	proceeds, err := t.ensure(ctx, currency.Account{ID: ProceedsID(sold, paidIn), Currency: paidIn, Kind: currency.Wallet})
	if err != nil {
		return Action{}, fmt.Errorf("sale: %w", err)
	}
	// The mint first: a payment the buyer cannot make undoes it.
	mint := currency.Transfer{Key: key, From: currency.IssuanceID(sold), To: dst.ID, Amount: amount,
		Memo: fmt.Sprintf("sale at %s %s per %s", price, paidIn, sold)}
	pay := currency.Transfer{Key: key + payLeg, From: src.ID, To: proceeds.ID, Amount: cost,
		Memo: fmt.Sprintf("purchase of %s %s at %s %s", amount, sold, price, paidIn)}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindSale, Target: buyer,
			Request: fmt.Sprintf("sell %s %s to %s for %s", amount, sold, buyer, paidIn),
			After:   map[string]string{"price": price.String(), "cost": cost.String()}},
		Ops:   []currency.Op{mint, pay},
		Watch: []currency.AccountID{src.ID, proceeds.ID, dst.ID, currency.IssuanceID(sold)},
	})
}
