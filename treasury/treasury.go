package treasury

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// Treasury runs the administrative actions on a Store. It is safe for
// concurrent use.
type Treasury struct {
	s       Store
	l       currency.Ledger
	periods *caps.Periods
}

// New returns the treasury of s. periods decides which period of a spend
// cap is under way when one is set, and the step a spend rate is set at
// (package caps): give the House of the same process the same, and s the
// same clock (periods.Now), so that the period a cap is set in and the
// one offers reserve from are one. A nil periods is one on s's clock.
func New(s Store, periods *caps.Periods) *Treasury {
	if periods == nil {
		periods = caps.NewPeriods(s.Now)
	}
	return &Treasury{s: s, l: s.Ledger(), periods: periods}
}

// Ledger is the ledger the treasury acts on, for reads.
func (t *Treasury) Ledger() currency.Ledger { return t.l }

// Periods is the treasury's clock of the caps' periods, for a House of
// the same process.
func (t *Treasury) Periods() *caps.Periods { return t.periods }

// Actions lists the trail, newest first: up to limit actions from before
// the one with key before (from the newest if empty).
func (t *Treasury) Actions(ctx context.Context, before string, limit int) ([]Action, error) {
	return t.s.Actions(ctx, before, limit)
}

// commit checks what every action needs (an actor, a key, a short memo)
// and commits c.
func (t *Treasury) commit(ctx context.Context, c Change) (Action, error) {
	a, _, err := t.commitFresh(ctx, c)
	return a, err
}

// commitFresh is commit that also says whether this call made the action
// (false: it was in the trail already).
func (t *Treasury) commitFresh(ctx context.Context, c Change) (Action, bool, error) {
	a := c.Action
	op := "treasury." + a.Kind
	if strings.TrimSpace(a.Actor) == "" || len(a.Actor) > currency.MaxIDLen {
		return Action{}, false, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "actor", Message: "every administrative action names who did it"}
	}
	if a.Key == "" || len(a.Key) > currency.MaxIDLen || strings.ContainsAny(a.Key, " \t\r\n") {
		return Action{}, false, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "key", Message: "an idempotency key (no spaces, at most 200 bytes) makes a repeated action safe"}
	}
	if len(a.Memo) > currency.MaxMemoLen {
		return Action{}, false, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "memo", Message: "at most 500 bytes"}
	}
	got, fresh, err := t.s.Commit(ctx, c)
	if err != nil {
		return Action{}, false, fmt.Errorf("%s %s: %w", a.Kind, a.Target, err)
	}
	return got, fresh, nil
}

// Grant mints amount into owner's wallet in cur: a transfer from the
// currency's issuance account under key.
func (t *Treasury) Grant(ctx context.Context, actor string, cur currency.Code, owner string, amount decimal.Decimal, key, memo string) (Action, error) {
	w := currency.WalletID(cur, owner)
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindGrant, Target: string(w), Memo: memo,
			Request: fmt.Sprintf("grant %s %s to %s", amount, cur, owner)},
		Ops:   []currency.Op{currency.Grant(cur, owner, amount, key, memo)},
		Watch: []currency.AccountID{w, currency.IssuanceID(cur)},
	})
}

// Burn takes amount out of owner's wallet in cur and out of the supply:
// a transfer back to the issuance account.
func (t *Treasury) Burn(ctx context.Context, actor string, cur currency.Code, owner string, amount decimal.Decimal, key, memo string) (Action, error) {
	w := currency.WalletID(cur, owner)
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindBurn, Target: string(w), Memo: memo,
			Request: fmt.Sprintf("burn %s %s of %s", amount, cur, owner)},
		Ops:   []currency.Op{currency.Transfer{Key: key, From: w, To: currency.IssuanceID(cur), Amount: amount, Memo: memo}},
		Watch: []currency.AccountID{w, currency.IssuanceID(cur)},
	})
}

// OpenKey is the default idempotency key of opening account id, for
// every caller that lets the treasury choose: open/<account>, as in
// open/wallet/CRED/alice, one per account whatever its kind or currency.
func OpenKey(id currency.AccountID) string { return "open/" + string(id) }

// Open opens owner's wallet in cur, under parent's wallet (an
// organisation's or a project's) unless parent is empty. Opening again is
// a no-op; opening with another parent is EConflict.
func (t *Treasury) Open(ctx context.Context, actor string, cur currency.Code, owner, parent, key string) (Action, error) {
	acc := currency.Account{ID: currency.WalletID(cur, owner), Currency: cur, Kind: currency.Wallet}
	if parent != "" {
		acc.Parent = currency.WalletID(cur, parent)
	}
	if _, err := t.l.OpenAccount(ctx, acc); err != nil {
		return Action{}, fmt.Errorf("open %s: %w", acc.ID, err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindOpen, Target: string(acc.ID),
			Request: fmt.Sprintf("open %s under %q", acc.ID, acc.Parent),
			After:   map[string]string{"parent": string(acc.Parent)}},
	})
}

// CreateCurrency creates currency c and its issuance account. Creating it
// again with the same scale does nothing more than answer; with another
// scale it is refused by the ledger.
func (t *Treasury) CreateCurrency(ctx context.Context, actor string, c currency.Currency, key string) (Action, error) {
	if err := t.l.CreateCurrency(ctx, c); err != nil {
		return Action{}, fmt.Errorf("currency %s: %w", c.Code, err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindCurrency, Target: string(c.Code),
			Request: fmt.Sprintf("currency %s scale %d", c.Code, c.Scale),
			After:   map[string]string{"scale": fmt.Sprint(c.Scale)}},
	})
}

// OpenRevenue opens owner's revenue account in cur: where a server's
// charges are paid, or an administration's receipts.
func (t *Treasury) OpenRevenue(ctx context.Context, actor string, cur currency.Code, owner, key string) (Action, error) {
	acc := currency.Account{ID: currency.RevenueID(cur, owner), Currency: cur, Kind: currency.Revenue}
	if _, err := t.l.OpenAccount(ctx, acc); err != nil {
		return Action{}, fmt.Errorf("open %s: %w", acc.ID, err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindOpen, Target: string(acc.ID), Request: fmt.Sprintf("open %s", acc.ID)},
	})
}

// notFound says that a thing the action needs is missing.
func notFound(op, field, msg string) error {
	return &bourse.Error{Code: bourse.ENotFound, Op: op, Field: field, Message: msg}
}

// isNotFound reports whether err is a lookup that found nothing.
func isNotFound(err error) bool {
	var be *bourse.Error
	return errors.As(err, &be) && be.Code == bourse.ENotFound
}

// bound is a limit set on amounts of money: a field and its value.
type bound struct {
	field string
	value decimal.Decimal
}

// checkLimits checks limits with currency.CheckLimit, in order.
func checkLimits(op string, money currency.Currency, ls ...bound) error {
	for _, l := range ls {
		if err := money.CheckLimit(l.field, l.value); err != nil {
			return withOp(op, err)
		}
	}
	return nil
}

// withOp names op, the treasury's action, in err where err is a
// *bourse.Error of a rule the action applied (a limit's, a cap's), so
// that the administrator reads which action refused.
func withOp(op string, err error) error {
	var be *bourse.Error
	if errors.As(err, &be) {
		be.Op = op
	}
	return err
}

// CancelContract records in the audit trail that actor cancelled
// contract id, and why (reason): the cancel itself is the exchange's
// store's (exchange.Cancel), made after this line is written, so that
// no cancel goes unexplained. The same key records it once.
func (t *Treasury) CancelContract(ctx context.Context, actor, id, reason, key string) (Action, error) {
	return t.commit(ctx, Change{Action: Action{Key: key, Actor: actor, Kind: KindContractCancel, Target: "contract/" + id, Memo: reason,
		Request: "cancel contract " + id}})
}
