package caps

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// BudgetTo is what brings w, the budget of s's period under way (opened
// already), to s.Limit, under key, decided on the ledger as tx reads it.
// A budget never given anything is given the limit under the key the
// House mints it with (BudgetKey), so that a House that read the cap
// before this change and mints after it finds the key used and mints
// nothing. Otherwise the budget is given, or gives back up to what it
// has, the limit less all it was ever given: what the period has used
// (charged or held) stays used, however often the cap was removed, set
// again, lowered or raised within the period.
func BudgetTo(ctx context.Context, tx currency.TxReader, s Spend, w currency.AccountID, key string) ([]currency.Op, error) {
	iss := currency.IssuanceID(SpendCode(s.Currency))
	memo := fmt.Sprintf("%s spend cap of %s set to %s", s.Period, s.Owner, s.Limit)
	house := BudgetKey(w)
	minted, err := tx.Used(ctx, house)
	if err != nil {
		return nil, err
	}
	if !minted {
		if !s.Limit.IsPositive() {
			return nil, nil
		}
		return []currency.Op{currency.Transfer{Key: house, From: iss, To: w, Amount: s.Limit, Memo: memo}}, nil
	}
	given, err := tx.Net(ctx, w, iss)
	if err != nil {
		return nil, err
	}
	return adjust(s.Currency, w, s.Limit.Sub(given), key+"/budget", memo), nil
}

// adjust gives budget w of cur's spend caps delta, minted, or, negative,
// gives back -delta to the issuance account up to what w has (not what
// it holds for running contracts): none for zero.
func adjust(cur currency.Code, w currency.AccountID, delta decimal.Decimal, key, memo string) []currency.Op {
	iss := currency.IssuanceID(SpendCode(cur))
	switch {
	case delta.IsPositive():
		return []currency.Op{currency.Transfer{Key: key, From: iss, To: w, Amount: delta, Memo: memo}}
	case delta.IsNegative():
		return []currency.Op{currency.Transfer{Key: key, From: w, To: iss, Amount: delta.Neg(), UpTo: true, Memo: memo}}
	}
	return nil
}

// budget makes sc's budget for its period, once per Periods: the unit
// currency, its spent account, the wallet, and the limit minted under
// the period's key (BudgetKey), so that exchanges racing to make it make
// it once. A bucket's is never minted here: the treasury fills it.
func (p *Periods) budget(ctx context.Context, l currency.Ledger, limits Limits, sc spendCheck) error {
	if p.made.has(sc.wallet) {
		return nil
	}
	money, err := l.Currency(ctx, sc.cap.Currency)
	if err != nil {
		return err
	}
	if err := OpenBudget(ctx, l, sc.cap.Currency, money.Scale, sc.wallet); err != nil {
		return err
	}
	limit := sc.cap.Limit
	if f, ok := limits.(FreshLimits); ok && sc.cap.Period != Bucketed {
		caps, err := f.FreshSpendCaps(ctx, sc.cap.Owner, sc.cap.Currency)
		if err != nil {
			return fmt.Errorf("spend caps of %s: %w", sc.cap.Owner, err)
		}
		for _, c := range caps {
			if c.Period == sc.cap.Period {
				limit = c.Limit
			}
		}
	}
	if limit.IsPositive() && sc.cap.Period != Bucketed {
		mint := currency.Transfer{Key: BudgetKey(sc.wallet), From: currency.IssuanceID(SpendCode(sc.cap.Currency)),
			To: sc.wallet, Amount: limit, Memo: fmt.Sprintf("%s spend cap of %s", sc.cap.Period, sc.cap.Owner)}
		if _, err := currency.Do(ctx, l, mint); err != nil && bourse.ErrorCode(err) != bourse.EIdempotencyConflict {
			return fmt.Errorf("spend cap budget %s: %w", sc.wallet, err)
		}
	}
	p.made.remember(sc.wallet, sc.ends, p.now())
	return nil
}
