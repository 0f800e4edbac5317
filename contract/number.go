package contract

import (
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

const (
	// MaxPlaces is the most decimal places a number in an offer may have, and
	// the largest currency scale Charge accepts. It is far finer than any
	// currency or meter while keeping the exact arithmetic small.
	MaxPlaces = 18

	// MaxIntDigits is the most digits a number in an offer may have before
	// the decimal point: every price, coordinate and prepayment is below
	// 10^18.
	MaxIntDigits = 18
)

// maxExp bounds the exponent of decimals that arrive from code rather than
// text. Decimal arithmetic aligns exponents through powers of ten as large
// as their difference, so decimal.New(1, -2e9) would take gigabytes.
const maxExp = 64

var one = decimal.NewFromInt(1)

// checkNumber says why d may not appear in an offer, or returns "".
func checkNumber(d decimal.Decimal) string {
	if e := d.Exponent(); e < -maxExp || e > maxExp {
		return fmt.Sprintf("exponent %d is out of range", e)
	}
	if !belowMax(d) {
		return fmt.Sprintf("%s is not below 10^%d", d, MaxIntDigits)
	}
	if !hasPlaces(d, MaxPlaces) {
		return fmt.Sprintf("%s has more than %d decimal places", d, MaxPlaces)
	}
	return ""
}

// belowMax reports whether |d| < 10^MaxIntDigits. A coefficient of k
// digits times 10^e is at least 10^(k−1+e) and below 10^(k+e), so it is
// below the bound exactly when k + e ≤ MaxIntDigits; counting digits
// allocates nothing where comparing with the bound would.
func belowMax(d decimal.Decimal) bool {
	return d.IsZero() || int64(d.NumDigits())+int64(d.Exponent()) <= MaxIntDigits
}

// hasPlaces reports whether d is a multiple of 10^-places. It compares
// values, so 1.50 has one place however it was written.
func hasPlaces(d decimal.Decimal, places int32) bool {
	return d.Equal(d.Truncate(places))
}

// parseDecimal reads a plain decimal: an optional minus sign, digits, and
// an optional fraction, like a JSON number without exponent. Exponents are
// refused because "1e999999" is one short string that no arithmetic can
// afford; NaN and Inf cannot be written at all.
func parseDecimal(s string) (decimal.Decimal, string) {
	body := s
	if len(body) > 0 && body[0] == '-' {
		body = body[1:]
	}
	intPart, frac := body, ""
	for i := 0; i < len(body); i++ {
		if body[i] == '.' {
			intPart, frac = body[:i], body[i+1:]
			if frac == "" {
				return decimal.Zero, fmt.Sprintf("%q needs digits after the point", s)
			}
			break
		}
	}
	switch {
	case intPart == "":
		return decimal.Zero, fmt.Sprintf("%q is not a decimal like \"12.50\"", s)
	case !digits(intPart) || !digits(frac):
		return decimal.Zero, fmt.Sprintf("%q is not a decimal like \"12.50\" (no exponents, signs but a leading minus, or spaces)", s)
	case len(intPart) > 1 && intPart[0] == '0':
		return decimal.Zero, fmt.Sprintf("%q has a leading zero", s)
	case len(intPart) > MaxIntDigits:
		return decimal.Zero, fmt.Sprintf("%q has more than %d digits before the point", s, MaxIntDigits)
	case len(frac) > MaxPlaces:
		return decimal.Zero, fmt.Sprintf("%q has more than %d decimal places", s, MaxPlaces)
	}
	d, err := decimal.NewFromString(s)
	if err != nil { // unreachable after the checks above; kept so a library change cannot slip through
		return decimal.Zero, fmt.Sprintf("%q: %v", s, err)
	}
	return d, ""
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// CheckQuantity checks a measured quantity (a reading's U, S or energy)
// against the limits every number of an offer has: not negative, below
// 10^MaxIntDigits, at most MaxPlaces decimal places, and an exponent that
// exact arithmetic can afford. A quantity past them would be stored, then
// fail every settlement that prices it; field names it in the EInvalid
// error.
func CheckQuantity(op, field string, d decimal.Decimal) error {
	if why := checkNumber(d); why != "" {
		return fail(bourse.EInvalid, op, field, "%s", why)
	}
	if d.Sign() < 0 {
		return fail(bourse.EInvalid, op, field, "negative: %s", d)
	}
	return nil
}

// Check checks a usage as a server reports it, before anything stores it:
// U and S pass CheckQuantity and T is not negative. Usage that passes can
// always be priced by Charge on valid terms.
func (u Usage) Check(op string) error {
	if err := CheckQuantity(op, "u", u.U); err != nil {
		return err
	}
	if err := CheckQuantity(op, "s", u.S); err != nil {
		return err
	}
	if u.T < 0 {
		return fail(bourse.EInvalid, op, "t", "negative: %v", u.T)
	}
	return nil
}
