package currency

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Convert converts money between two currencies at Rate, in units of To's
// currency per unit of From's: Amount leaves the wallet From for its
// currency's issuance account (it leaves that currency's supply), and
// Amount × Rate, rounded down to To's scale, comes to the wallet To out of
// its currency's issuance account. Each leg is a double-entry movement
// within one currency, so every currency still sums to zero; both are one
// operation, so they happen together or not at all, once per key. The
// rate is part of what the key stands for, and each leg's memo records it.
type Convert struct {
	Key    string          `json:"key"`
	From   AccountID       `json:"from"`
	To     AccountID       `json:"to"`
	Amount decimal.Decimal `json:"amount"`
	Rate   decimal.Decimal `json:"rate"`
	Memo   string          `json:"memo,omitempty"`
}

func (o Convert) IdempotencyKey() string { return o.Key }

// content is what the key stands for. Its kind, and the legs' memo and
// ids (x/<key>/…), keep the name the operation had before, exchange: they
// are stored, and compared with what a retry sends.
func (o Convert) content() content {
	return content{kind: "exchange", memo: o.Memo, hasMemo: true, fields: []field{
		{"from", string(o.From)}, {"to", string(o.To)}, {"amount", o.Amount.String()}, {"rate", o.Rate.String()}}}
}

// memo is what each leg's movement says: the rate, then the caller's memo.
func (o Convert) memo() string {
	m := "exchange at " + o.Rate.String()
	if o.Memo != "" {
		m += ": " + o.Memo
	}
	return m
}

// Converted is what Amount comes to at Rate in a currency of scale
// decimal places: rounded down, so an exchange never creates the part of
// a cent the rate cannot pay.
func Converted(amount, rate decimal.Decimal, scale int32) decimal.Decimal {
	return amount.Mul(rate).RoundDown(scale)
}

func (a applier) convert(ctx context.Context, o Convert) (Result, error) {
	from, err := a.account(ctx, "from", o.From)
	if err != nil {
		return Result{}, err
	}
	to, err := a.account(ctx, "to", o.To)
	if err != nil {
		return Result{}, err
	}
	if from.Kind != Wallet || to.Kind != Wallet {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "from", Message: "an exchange is from a wallet to a wallet"}
	}
	if from.Currency == to.Currency {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "to",
			Message: fmt.Sprintf("%s and %s are both in %s: that is a transfer", from.ID, to.ID, from.Currency)}
	}
	if !o.Rate.IsPositive() {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "rate", Message: "the rate must be above zero, not " + o.Rate.String()}
	}
	fc, err := a.currency(ctx, from.Currency)
	if err != nil {
		return Result{}, err
	}
	tc, err := a.currency(ctx, to.Currency)
	if err != nil {
		return Result{}, err
	}
	if err := fc.CheckAmount("amount", o.Amount); err != nil {
		return Result{}, err
	}
	got := Converted(o.Amount, o.Rate, tc.Scale)
	if !got.IsPositive() {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "amount",
			Message: fmt.Sprintf("%s %s at %s is less than the smallest amount of %s", o.Amount, fc.Code, o.Rate, tc.Code)}
	}
	if err := tc.CheckAmount("amount", got); err != nil {
		return Result{}, err
	}
	fromIss, err := a.account(ctx, "from", IssuanceID(fc.Code))
	if err != nil {
		return Result{}, err
	}
	toIss, err := a.account(ctx, "to", IssuanceID(tc.Code))
	if err != nil {
		return Result{}, err
	}
	if err := a.cover(ctx, from, o.Amount); err != nil {
		return Result{}, err
	}
	if err := a.bounded(ctx, toIss, to, got); err != nil {
		return Result{}, err
	}
	out := Movement{ID: "x/" + o.Key + "/out", Key: o.Key, Currency: fc.Code, From: from.ID, To: fromIss.ID, Amount: o.Amount, Memo: o.memo(), At: a.now}
	in := Movement{ID: "x/" + o.Key + "/in", Key: o.Key, Currency: tc.Code, From: toIss.ID, To: to.ID, Amount: got, Memo: o.memo(), At: a.now}
	for _, m := range []Movement{out, in} {
		if err := a.s.Post(ctx, m); err != nil {
			return Result{}, err
		}
	}
	return Result{Movements: []Movement{out, in}}, nil
}
