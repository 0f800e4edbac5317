package caps

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// holdGrace is how long a cap's hold outlives its contract's escrow: the
// contract always ends first, releasing it, even by the fixed rule.
const holdGrace = time.Hour

// Offer is what the caps weigh of an offer.
type Offer struct {
	// Owners are the offer's client and the owners of the wallets above
	// the client's in Currency (its project, its organisation), nearest
	// first.
	Owners     []string
	Currency   currency.Code
	GPUs       int
	Prepayment decimal.Decimal
	// Scale is Currency's places, for the refusals and warnings to write
	// money as people read it (currency.Format); negative: exactly.
	Scale int32
}

// Admission is what the caps said of an offer they let through: the caps
// it is under, and each spend budget as it was when checked.
type Admission struct {
	offer  Offer
	gpus   []string // the owners with a GPU cap, nearest first
	spends []spendCheck
}

// spendCheck is one spend cap an offer is under: its budget then.
type spendCheck struct {
	cap    Spend
	wallet currency.AccountID
	ends   time.Time
	bal    currency.Balance
	scale  int32 // the currency's places, for its words (Offer.Scale)
}

// Admit checks o against every cap above its client before the
// negotiation. gpuCaps[i] is the balance of o.Owners[i]'s GPUWallet (with
// no Account where it has none), which the caller reads with the
// client's funds in one go. The spend caps are limits' (none if limits is
// nil), and the budget of each for the period under way is made where
// missing. An offer a cap cannot take now is refused (ECapExceeded); the
// escrow's reserves (Admission.Reserves) check again, atomically.
func (p *Periods) Admit(ctx context.Context, l currency.Ledger, limits Limits, o Offer, gpuCaps []currency.Balance) (Admission, error) {
	capped, err := checkGPUs(o.Owners, gpuCaps, o.GPUs)
	if err != nil {
		return Admission{}, err
	}
	a := Admission{offer: o, gpus: capped}
	if limits == nil {
		return a, nil
	}
	now := p.now()
	for _, owner := range o.Owners {
		spends, err := limits.SpendCaps(ctx, owner, o.Currency)
		if err != nil {
			return Admission{}, fmt.Errorf("spend caps of %s: %w", owner, err)
		}
		for _, s := range spends {
			sc := spendCheck{cap: s, wallet: BudgetWallet(owner, o.Currency, s.Period, now), scale: o.Scale}
			_, sc.ends = s.Period.Span(now)
			if err := p.budget(ctx, l, limits, sc); err != nil {
				return Admission{}, err
			}
			if sc.bal, err = l.Balance(ctx, sc.wallet); err != nil {
				return Admission{}, err
			}
			if sc.bal.Available.LessThan(o.Prepayment) {
				return Admission{}, sc.exceeded(o.Prepayment)
			}
			a.spends = append(a.spends, sc)
		}
	}
	return a, nil
}

// Reserves are the reserves of contract c's GPUs from the GPU caps above
// it and of its prepayment from the spend budgets, for the escrow's
// transaction, their holds noted on c (CapHolds, SpendHolds). The
// client's own GPU cap holds gpus/<contract>, as before caps had parents;
// a project's or organisation's gpus/<contract>/<owner>. offerID names
// the negotiation, deadline the escrow's.
func (a Admission) Reserves(c *contract.Contract, offerID string, deadline time.Time) []currency.Reserve {
	var out []currency.Reserve
	for _, o := range a.gpus {
		key, hold := "cap-reserve/"+offerID, "gpus/"+c.ID
		if o != c.Client {
			key, hold = key+"/"+o, hold+"/"+o
		}
		c.CapHolds = append(c.CapHolds, hold)
		out = append(out, currency.Reserve{Key: key, Hold: currency.HoldID(hold), From: GPUWallet(o),
			Amount: decimal.NewFromInt(int64(c.Terms.GPUs)), Deadline: deadline.Add(holdGrace), Memo: "GPUs of contract " + c.ID})
	}
	for i, sc := range a.spends {
		hold := fmt.Sprintf("spend/%s/%d", c.ID, i)
		c.SpendHolds = append(c.SpendHolds, hold)
		out = append(out, currency.Reserve{Key: fmt.Sprintf("spend-reserve/%s/%d", offerID, i), Hold: currency.HoldID(hold), From: sc.wallet,
			Amount: c.Terms.Prepayment, Deadline: deadline.Add(holdGrace), Memo: fmt.Sprintf("prepayment of contract %s, %s spend cap of %s", c.ID, sc.cap.Period, sc.cap.Owner)})
	}
	return out
}

// Refusal names the cap whose reserve failed in an escrow that failed
// with err for want of funds, where one did (another offer took what was
// left since Admit); otherwise it returns err. It reads the caps' wallets
// again.
func (a Admission) Refusal(ctx context.Context, l currency.Ledger, err error) error {
	o := a.offer
	for _, owner := range a.gpus {
		if bal, berr := l.Balance(ctx, GPUWallet(owner)); berr == nil && bal.Available.LessThan(decimal.NewFromInt(int64(o.GPUs))) {
			return gpusExceeded(owner, bal, o.GPUs)
		}
	}
	for _, sc := range a.spends {
		if bal, berr := l.Balance(ctx, sc.wallet); berr == nil && bal.Available.LessThan(o.Prepayment) {
			sc.bal = bal
			return sc.exceeded(o.Prepayment)
		}
	}
	return err
}

// Warnings are the warnings for the client of an escrowed offer that took
// a spend budget past its cap's warning share, one a cap; it reads the
// budgets again. A budget it cannot read is passed over: a warning is
// advice, the escrow is done.
func (a Admission) Warnings(ctx context.Context, l currency.Ledger) []string {
	var out []string
	for _, sc := range a.spends {
		if !sc.cap.Warn.IsPositive() {
			continue
		}
		after, err := l.Balance(ctx, sc.wallet)
		if err != nil {
			continue
		}
		if w, ok := sc.warning(after); ok {
			out = append(out, w)
		}
	}
	return out
}
