package caps

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bourse/bourse/currency"
)

// GPUCode is the unit currency of concurrent-GPU caps. An owner with a
// wallet in it may hold at most that wallet's balance of GPUs in
// contracts at once; one without such a wallet has no cap.
const GPUCode currency.Code = "GPU-CAP"

// GPUWallet is owner's concurrent-GPU cap.
func GPUWallet(owner string) currency.AccountID { return currency.WalletID(GPUCode, owner) }

// GPUOwner is the owner of a GPU cap wallet (GPUWallet's inverse).
func GPUOwner(w currency.AccountID) string {
	return strings.TrimPrefix(string(w), string(GPUWallet("")))
}

// OpenGPUWallet makes the GPU cap currency and owner's cap wallet where
// they are missing, and returns the wallet.
func OpenGPUWallet(ctx context.Context, l currency.Ledger, owner string) (currency.AccountID, error) {
	if err := l.CreateCurrency(ctx, currency.Currency{Code: GPUCode, Scale: 0}); err != nil {
		return "", fmt.Errorf("cap of %s: %w", owner, err)
	}
	w := GPUWallet(owner)
	if _, err := l.OpenAccount(ctx, currency.Account{ID: w, Currency: GPUCode, Kind: currency.Wallet}); err != nil {
		return "", fmt.Errorf("cap of %s: %w", owner, err)
	}
	return w, nil
}

// SpendCode is the unit currency of cur's spend budgets. Currency codes
// are at most 16 characters, so spend caps need a cur of at most 10
// (SpendCodeFits).
func SpendCode(cur currency.Code) currency.Code { return "SPEND-" + cur }

// SpendCodeFits reports whether cur is short enough to have spend caps.
func SpendCodeFits(cur currency.Code) bool { return len(SpendCode(cur)) <= 16 }

// Unit reports whether c counts caps rather than money: GPUs, or a spend
// cap's budget.
func Unit(c currency.Code) bool {
	return c == GPUCode || strings.HasPrefix(string(c), "SPEND-")
}

// BudgetWallet is the budget of owner's spend cap of period p in cur for
// the period that contains at: wallet/SPEND-<cur>/<owner>@<p>.<label>
// (Period.Span). Periods.Budget is the one under way.
func BudgetWallet(owner string, cur currency.Code, p Period, at time.Time) currency.AccountID {
	label, _ := p.Span(at)
	return currency.WalletID(SpendCode(cur), owner+"@"+string(p)+"."+label)
}

// BucketWallet is the budget of owner's spend rate in cur, its token
// bucket, which never renews.
func BucketWallet(owner string, cur currency.Code) currency.AccountID {
	return BudgetWallet(owner, cur, Bucketed, time.Time{})
}

// BudgetKey is the key of the transfer that first gives budget w its
// limit, whoever makes it: the House when an offer first meets the
// period, or the treasury when a cap is set before that.
func BudgetKey(w currency.AccountID) string {
	return "spend-budget/" + strings.TrimPrefix(string(w), "wallet/")
}

// SpentID collects what the budgets of cur paid for: captures need a
// destination in the budget's currency.
func SpentID(cur currency.Code) currency.AccountID {
	return currency.RevenueID(SpendCode(cur), "spent")
}

// OpenBudget makes the unit currency of cur's spend budgets (scale is
// cur's), its spent account and the budget w, where they are missing.
func OpenBudget(ctx context.Context, l currency.Ledger, cur currency.Code, scale int32, w currency.AccountID) error {
	code := SpendCode(cur)
	if err := l.CreateCurrency(ctx, currency.Currency{Code: code, Scale: scale}); err != nil {
		return fmt.Errorf("spend cap currency %s: %w", code, err)
	}
	for _, a := range []currency.Account{
		{ID: SpentID(cur), Currency: code, Kind: currency.Revenue},
		{ID: w, Currency: code, Kind: currency.Wallet},
	} {
		if _, err := l.OpenAccount(ctx, a); err != nil {
			return fmt.Errorf("spend cap budget %s: %w", a.ID, err)
		}
	}
	return nil
}
