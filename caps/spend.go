package caps

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Spend is one cap on Owner's spending in Currency: Limit a Period, or,
// for Rate, a bucket of capacity Limit.
type Spend struct {
	Owner    string          `json:"owner"`
	Currency currency.Code   `json:"currency"`
	Period   Period          `json:"period"`
	Limit    decimal.Decimal `json:"limit"`
	// Warn is the share of the limit (0.8 for 80%) past which the client
	// whose offer crosses it is warned; zero for never.
	Warn decimal.Decimal `json:"warn"`
}

// Limits gives the spend caps on an owner's own spending in a currency
// (not its parents'): the treasury keeps them (treasury.Treasury's
// SpendCaps), and Admit asks for those of the client and its parents.
type Limits interface {
	SpendCaps(ctx context.Context, owner string, cur currency.Code) ([]Spend, error)
}

// FreshLimits is Limits that answers from a cache and can also read its
// store: Admit reads afresh the limit it mints a period's budget with, so
// that a cap changed just before a period begins is the one the period
// gets.
type FreshLimits interface {
	FreshSpendCaps(ctx context.Context, owner string, cur currency.Code) ([]Spend, error)
}
