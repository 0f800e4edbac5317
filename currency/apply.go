package currency

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Apply applies one operation to s: the ledger's rules, written once for
// every backend. A business failure comes back in Result.Err and is stored
// under the key like a success; the returned error is only for s failing,
// and then the backend must discard everything s wrote.
func Apply(ctx context.Context, s Books, op Op) (Result, error) {
	key := op.IdempotencyKey()
	name := opName(op)
	if err := checkName("currency."+name, "key", key); err != nil {
		return Result{Key: key, Op: name, Err: asError(err)}, nil
	}
	stored, print, found, err := s.Result(ctx, key)
	if err != nil {
		return Result{}, fmt.Errorf("read result of key %q: %w", key, err)
	}
	if found {
		if print == ForgottenFingerprint {
			return Result{Key: key, Op: name, Err: forgottenKey(name, key)}, nil
		}
		if e := conflict(op.content(), key, stored, print); e != nil {
			return Result{Key: key, Op: name, Err: e}, nil
		}
		return stored, nil
	}
	a := applier{s: s, now: s.Now().UTC()}
	var r Result
	err = checkMemo(memoOf(op))
	if err == nil {
		r, err = a.apply(ctx, op)
	}
	if err != nil {
		var be *bourse.Error
		if !errors.As(err, &be) {
			return Result{}, err
		}
		be.Op = "currency." + name
		r = Result{Err: be}
	}
	r.Key, r.Op = key, name
	if err := s.PutResult(ctx, r, op.content().fingerprint()); err != nil {
		return Result{}, fmt.Errorf("store result of key %q: %w", key, err)
	}
	return r, nil
}

// asError turns a validation error into the recorded form.
func asError(err error) *bourse.Error {
	var be *bourse.Error
	if errors.As(err, &be) {
		return be
	}
	return &bourse.Error{Code: bourse.EInternal, Message: err.Error()}
}

type applier struct {
	s   Books
	now time.Time
}

// apply returns a *bourse.Error for business failures and any other error
// for infrastructure failures.
func (a applier) apply(ctx context.Context, op Op) (Result, error) {
	switch o := op.(type) {
	case Transfer:
		return a.transfer(ctx, o)
	case Reserve:
		return a.reserve(ctx, o)
	case Capture:
		return a.resolve(ctx, o.Key, o.Hold, HoldCaptured, o.To, o.Amount, o.Memo, o.IfOpen)
	case Void:
		return a.resolve(ctx, o.Key, o.Hold, HoldVoided, "", decimal.Zero, o.Memo, o.IfOpen)
	case Expire:
		return a.resolve(ctx, o.Key, o.Hold, HoldExpired, "", decimal.Zero, "expired", false)
	case Convert:
		return a.convert(ctx, o)
	}
	return Result{}, &bourse.Error{Code: bourse.EInvalid, Message: fmt.Sprintf("unknown operation %T", op)}
}

func (a applier) transfer(ctx context.Context, o Transfer) (Result, error) {
	from, err := a.account(ctx, "from", o.From)
	if err != nil {
		return Result{}, err
	}
	to, err := a.account(ctx, "to", o.To)
	if err != nil {
		return Result{}, err
	}
	if from.ID == to.ID {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "to", Message: "cannot transfer to the same account"}
	}
	if from.Kind == Escrow || to.Kind == Escrow {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "from", Message: "escrow accounts move only by capture, void or expire"}
	}
	if from.Currency != to.Currency {
		return Result{}, &bourse.Error{Code: bourse.ECurrencyMismatch, Field: "to",
			Message: fmt.Sprintf("%s is in %s, %s in %s", from.ID, from.Currency, to.ID, to.Currency)}
	}
	cur, err := a.currency(ctx, from.Currency)
	if err != nil {
		return Result{}, err
	}
	if err := cur.CheckAmount("amount", o.Amount); err != nil {
		return Result{}, err
	}
	amount := o.Amount
	if o.UpTo && from.Kind != Issuance {
		bal, err := a.s.Balance(ctx, from.ID)
		if err != nil {
			return Result{}, err
		}
		if amount = decimal.Min(amount, bal); !amount.IsPositive() {
			return Result{}, nil
		}
	}
	if err := a.cover(ctx, from, amount); err != nil {
		return Result{}, err
	}
	if err := a.bounded(ctx, from, to, amount); err != nil {
		return Result{}, err
	}
	m := Movement{ID: "t/" + o.Key, Key: o.Key, Currency: cur.Code, From: from.ID, To: to.ID, Amount: amount, Memo: o.Memo, At: a.now}
	if err := a.s.Post(ctx, m); err != nil {
		return Result{}, err
	}
	return Result{Movements: []Movement{m}}, nil
}

func (a applier) reserve(ctx context.Context, o Reserve) (Result, error) {
	if err := checkName("", "hold", string(o.Hold)); err != nil {
		return Result{}, err
	}
	if o.Deadline.IsZero() {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "deadline", Message: "a hold needs a deadline"}
	}
	from, err := a.account(ctx, "from", o.From)
	if err != nil {
		return Result{}, err
	}
	if from.Kind != Wallet {
		return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "from", Message: "holds are made on wallets, not " + string(from.Kind) + " accounts"}
	}
	cur, err := a.currency(ctx, from.Currency)
	if err != nil {
		return Result{}, err
	}
	if err := cur.CheckAmount("amount", o.Amount); err != nil {
		return Result{}, err
	}
	if _, found, err := a.s.Hold(ctx, o.Hold); err != nil {
		return Result{}, err
	} else if found {
		return Result{}, &bourse.Error{Code: bourse.EConflict, Field: "hold", Message: "hold " + string(o.Hold) + " exists already"}
	}
	if _, found, err := a.s.Account(ctx, EscrowID(o.Hold)); err != nil {
		return Result{}, err
	} else if found {
		return Result{}, &bourse.Error{Code: bourse.EConflict, Field: "hold", Message: "account " + string(EscrowID(o.Hold)) + " exists already"}
	}
	if err := a.cover(ctx, from, o.Amount); err != nil {
		return Result{}, err
	}
	h := Hold{ID: o.Hold, Currency: cur.Code, From: from.ID, Amount: o.Amount, Status: HoldOpen,
		Deadline: o.Deadline.UTC(), Created: a.now}
	if err := a.s.PutAccount(ctx, Account{ID: h.Escrow(), Currency: cur.Code, Kind: Escrow, Created: a.now}); err != nil {
		return Result{}, err
	}
	if err := a.s.PutHold(ctx, h); err != nil {
		return Result{}, err
	}
	m := Movement{ID: "h/" + string(h.ID) + "/reserve", Key: o.Key, Currency: cur.Code, From: from.ID, To: h.Escrow(), Amount: o.Amount, Hold: h.ID, Memo: o.Memo, At: a.now}
	if err := a.s.Post(ctx, m); err != nil {
		return Result{}, err
	}
	return Result{Movements: []Movement{m}, Hold: &h}, nil
}

// resolve captures (amount to `to`, the rest back), voids or expires a hold.
func (a applier) resolve(ctx context.Context, key string, id HoldID, status HoldStatus, to AccountID, amount decimal.Decimal, memo string, ifOpen bool) (Result, error) {
	h, found, err := a.s.Hold(ctx, id)
	if err != nil {
		return Result{}, err
	}
	if ifOpen && (!found || h.Status != HoldOpen) {
		return Result{}, nil
	}
	if !found {
		return Result{}, &bourse.Error{Code: bourse.ENotFound, Field: "hold", Message: "no hold " + string(id)}
	}
	if h.Status != HoldOpen {
		return Result{}, &bourse.Error{Code: bourse.EHoldResolved, Field: "hold",
			Message: fmt.Sprintf("hold %s is %s already", id, h.Status)}
	}
	if status == HoldExpired && a.now.Before(h.Deadline) {
		return Result{}, &bourse.Error{Code: bourse.EHoldNotDue, Field: "hold",
			Message: fmt.Sprintf("hold %s is due at %s", id, h.Deadline.Format(time.RFC3339Nano))}
	}
	if status == HoldCaptured {
		dest, err := a.account(ctx, "to", to)
		if err != nil {
			return Result{}, err
		}
		if dest.Currency != h.Currency {
			return Result{}, &bourse.Error{Code: bourse.ECurrencyMismatch, Field: "to",
				Message: fmt.Sprintf("%s is in %s, hold %s in %s", dest.ID, dest.Currency, id, h.Currency)}
		}
		if dest.Kind == Escrow || dest.Kind == Issuance {
			return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "to", Message: "a capture pays a revenue account or a wallet"}
		}
		cur, err := a.currency(ctx, h.Currency)
		if err != nil {
			return Result{}, err
		}
		if err := cur.checkScale("amount", amount); err != nil {
			return Result{}, err
		}
		if amount.IsNegative() || amount.GreaterThan(h.Amount) {
			return Result{}, &bourse.Error{Code: bourse.EInvalid, Field: "amount",
				Message: fmt.Sprintf("capture of %s is outside 0..%s held", amount, h.Amount)}
		}
		h.CapturedTo = dest.ID
	}
	h.Status, h.Captured, h.Released, h.Resolved = status, amount, h.Amount.Sub(amount), a.now
	var ms []Movement
	post := func(dest AccountID, amt decimal.Decimal) error {
		if !amt.IsPositive() {
			return nil
		}
		m := Movement{ID: fmt.Sprintf("h/%s/resolve/%d", id, len(ms)), Key: key, Currency: h.Currency, From: h.Escrow(), To: dest, Amount: amt, Hold: id, Memo: memo, At: a.now}
		ms = append(ms, m)
		return a.s.Post(ctx, m)
	}
	if err := post(h.CapturedTo, h.Captured); err != nil {
		return Result{}, err
	}
	if err := post(h.From, h.Released); err != nil {
		return Result{}, err
	}
	if err := a.s.PutHold(ctx, h); err != nil {
		return Result{}, err
	}
	return Result{Movements: ms, Hold: &h}, nil
}

func (a applier) account(ctx context.Context, field string, id AccountID) (Account, error) {
	if err := checkName("", field, string(id)); err != nil {
		return Account{}, err
	}
	acc, found, err := a.s.Account(ctx, id)
	if err != nil {
		return Account{}, err
	}
	if !found {
		return Account{}, &bourse.Error{Code: bourse.ENotFound, Field: field, Message: "no account " + string(id)}
	}
	return acc, nil
}

func (a applier) currency(ctx context.Context, code Code) (Currency, error) {
	c, found, err := a.s.Currency(ctx, code)
	if err != nil {
		return Currency{}, err
	}
	if !found {
		return Currency{}, &bourse.Error{Code: bourse.EUnknownCurrency, Message: "no currency " + string(code)}
	}
	return c, nil
}

// cover checks that acc can pay amount; only issuance may go below zero.
func (a applier) cover(ctx context.Context, acc Account, amount decimal.Decimal) error {
	if acc.Kind == Issuance {
		return nil
	}
	bal, err := a.s.Balance(ctx, acc.ID)
	if err != nil {
		return err
	}
	if bal.LessThan(amount) {
		return &bourse.Error{Code: bourse.EInsufficientFunds, Field: "amount",
			Message: fmt.Sprintf("%s has %s, needs %s", acc.ID, bal, amount)}
	}
	return nil
}

// bounded keeps balances within MaxAmount: a mint may not push the money
// supply, nor a payment the payee's balance, past it.
func (a applier) bounded(ctx context.Context, from, to Account, amount decimal.Decimal) error {
	fb, err := a.s.Balance(ctx, from.ID)
	if err != nil {
		return err
	}
	tb, err := a.s.Balance(ctx, to.ID)
	if err != nil {
		return err
	}
	if fb.Sub(amount).Abs().GreaterThanOrEqual(MaxAmount) || tb.Add(amount).Abs().GreaterThanOrEqual(MaxAmount) {
		return &bourse.Error{Code: bourse.EInvalid, Field: "amount", Message: "a balance would reach the limit of 10^18"}
	}
	return nil
}

func memoOf(op Op) string {
	switch o := op.(type) {
	case Transfer:
		return o.Memo
	case Reserve:
		return o.Memo
	case Capture:
		return o.Memo
	case Void:
		return o.Memo
	case Convert:
		return o.memo()
	}
	return ""
}
