package caps

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// The words of the caps to a client: why an offer is refused, and the
// warning that a spend cap is nearly used. A refusal says which cap, what
// is used of it and when that changes, so that the client can tell a
// wait from a change of plan.

// gpusExceeded refuses gpus more GPUs to owner's cap, whose wallet is bal.
func gpusExceeded(owner string, bal currency.Balance, gpus int) error {
	total := bal.Available.Add(bal.Held)
	return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.gpus",
		Message: fmt.Sprintf("concurrent-GPU cap of %s: %s of %s GPUs in use, %d more asked; GPUs free as contracts end", owner, bal.Held, total, gpus)}
}

// exceeded refuses a prepayment that sc's budget cannot cover.
func (sc spendCheck) exceeded(prepayment decimal.Decimal) error {
	used := sc.cap.Limit.Sub(sc.bal.Available)
	money := func(d decimal.Decimal) string { return currency.Format(d, sc.scale) }
	if sc.cap.Period == Bucketed {
		return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.prepayment",
			Message: fmt.Sprintf("spend rate of %s: %s of its %s %s left, a prepayment of %s asked; it refills as time passes, and as contracts settle",
				sc.cap.Owner, money(sc.bal.Available), money(sc.cap.Limit), sc.cap.Currency, money(prepayment))}
	}
	return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.prepayment",
		Message: fmt.Sprintf("%s spend cap of %s: %s of %s %s charged or held this %s, a prepayment of %s asked; it frees as contracts settle and renews at %s",
			sc.cap.Period, sc.cap.Owner, money(used), money(sc.cap.Limit), sc.cap.Currency, sc.cap.Period, money(prepayment), sc.ends.Format(time.RFC3339))}
}

// warning is the warning for an offer that took sc's budget from sc.bal
// to after, where that crossed the cap's warning share.
func (sc spendCheck) warning(after currency.Balance) (string, bool) {
	line := sc.cap.Limit.Mul(decimal.NewFromInt(1).Sub(sc.cap.Warn))
	if !sc.bal.Available.GreaterThan(line) || after.Available.GreaterThan(line) {
		return "", false
	}
	used := sc.cap.Limit.Sub(after.Available)
	pct := used.Mul(decimal.NewFromInt(100)).Div(sc.cap.Limit).Round(0)
	money := func(d decimal.Decimal) string { return currency.Format(d, sc.scale) }
	if sc.cap.Period == Bucketed {
		return fmt.Sprintf("spend rate of %s: %s of its %s %s used (%s%%); offers past it are refused until it refills",
			sc.cap.Owner, money(used), money(sc.cap.Limit), sc.cap.Currency, pct), true
	}
	return fmt.Sprintf("%s spend cap of %s: %s of %s %s used this %s (%s%%); offers past it are refused until %s",
		sc.cap.Period, sc.cap.Owner, money(used), money(sc.cap.Limit), sc.cap.Currency, sc.cap.Period, pct, sc.ends.Format(time.RFC3339)), true
}
