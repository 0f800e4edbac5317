// Package currency holds the money of the market: currencies, accounts, the
// double-entry ledger's operations (transfers and two-phase escrow holds,
// each under an idempotency key) and the invariants an audit checks.
//
// The rules live here, once, in Apply; the backends (currency/mem for the
// simulator, the demo and unit tests; currency/sqlledger for PostgreSQL and
// CockroachDB) only store what Apply decides, inside their transactions.
package currency

import (
	"regexp"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Code names a currency, one per administrative domain: "GPU", "UNI-CRED".
type Code string

// MaxScale bounds a currency's decimal places: DECIMAL(38, MaxScale) columns
// leave 20 integer digits, far beyond any balance.
const MaxScale = 18

// MaxAmount bounds every amount and every balance (in absolute value), so
// that both backends agree: DECIMAL(38, 18) would overflow at 10^20, where
// the in-memory ledger would not. Prices and prepayments in contract stay
// below it too.
var MaxAmount = decimal.New(1, 18)

var codeRE = regexp.MustCompile(`^[A-Z][A-Z0-9_-]{0,15}$`)

// Currency is a unit of account with a fixed number of decimal places.
// Every amount in it is a multiple of 10^-Scale.
type Currency struct {
	Code  Code  `json:"code"`
	Scale int32 `json:"scale"`
}

// Validate checks the code's form and the scale's range.
func (c Currency) Validate() error {
	if !codeRE.MatchString(string(c.Code)) {
		return &bourse.Error{Code: bourse.EInvalid, Op: "currency.Validate", Field: "code",
			Message: "currency code must be 1-16 of A-Z, 0-9, _ or -, starting with a letter: " + quote(string(c.Code))}
	}
	if c.Scale < 0 || c.Scale > MaxScale {
		return &bourse.Error{Code: bourse.EInvalid, Op: "currency.Validate", Field: "scale",
			Message: "scale must be between 0 and 18"}
	}
	return nil
}

// CheckAmount reports whether a is a valid positive amount of c: more than
// zero and with no more decimal places than c's scale (amounts are never
// rounded silently; the caller rounds, in the client's favour).
func (c Currency) CheckAmount(field string, a decimal.Decimal) error {
	if err := c.checkScale(field, a); err != nil {
		return err
	}
	if !a.IsPositive() {
		return &bourse.Error{Code: bourse.EInvalid, Field: field, Message: "amount must be positive, got " + a.String()}
	}
	if a.GreaterThanOrEqual(MaxAmount) {
		return &bourse.Error{Code: bourse.EInvalid, Field: field, Message: "amount " + a.String() + " is not below the limit of 10^18"}
	}
	return nil
}

func (c Currency) checkScale(field string, a decimal.Decimal) error {
	if !a.Equal(a.Truncate(c.Scale)) {
		return &bourse.Error{Code: bourse.EInvalid, Field: field,
			Message: "amount " + a.String() + " has more decimal places than " + string(c.Code) + "'s scale"}
	}
	return nil
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return `"` + s + `"`
}

// CheckLimit checks a limit on amounts of c (a cap, a threshold, a level):
// zero or more, within c's scale, and below MaxAmount, which no amount
// reaches, so that a limit no amount could meet is refused where it is
// set rather than making every later amount fail.
func (c Currency) CheckLimit(field string, a decimal.Decimal) error {
	if err := c.checkScale(field, a); err != nil {
		return err
	}
	if a.IsNegative() {
		return &bourse.Error{Code: bourse.EInvalid, Field: field, Message: "a limit of " + a.String() + " is below zero"}
	}
	if a.GreaterThanOrEqual(MaxAmount) {
		return &bourse.Error{Code: bourse.EInvalid, Field: field, Message: "a limit of " + a.String() + " is not below 10^18, the bound of every amount and balance"}
	}
	return nil
}
