package contract

import (
	"strconv"

	"github.com/shopspring/decimal"
)

// AppendDecimal appends d as d.String() writes it ("0.6" for 0.60, "1500"
// for 15e2), which is also what its MarshalJSON quotes. It is the same
// text written without math/big when the coefficient has at most 18
// digits, which is every amount a market carries: big.Int's formatting was
// a twentieth of the exchange's CPU.
func AppendDecimal(b []byte, d decimal.Decimal) []byte {
	return appendDecimal(b, d, true)
}

// appendFixed appends d in the form parseDecimal reads, keeping the places
// it was written with ("12.50" stays "12.50").
func appendFixed(b []byte, d decimal.Decimal) []byte {
	return appendDecimal(b, d, d.Exponent() >= 0)
}

// appendDecimal writes d's coefficient with the point its exponent puts
// in, dropping the fraction's trailing zeros if trim, as decimal's own
// string(trim) does.
func appendDecimal(b []byte, d decimal.Decimal, trim bool) []byte {
	if d.NumDigits() > 18 {
		if trim {
			return append(b, d.String()...)
		}
		return append(b, d.StringFixed(-d.Exponent())...)
	}
	c, exp := d.CoefficientInt64(), int(d.Exponent())
	if c < 0 {
		b = append(b, '-')
	}
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], absInt64(c), 10)
	switch {
	case exp == 0:
		return append(b, digits...)
	case exp > 0:
		b = append(b, digits...)
		if c == 0 {
			return b
		}
		for range exp {
			b = append(b, '0')
		}
		return b
	}
	intPart, frac, leading := digits[:0], digits, -exp-len(digits)
	if leading < 0 {
		intPart, frac, leading = digits[:len(digits)+exp], digits[len(digits)+exp:], 0
	}
	if trim {
		i := len(frac)
		for i > 0 && frac[i-1] == '0' {
			i--
		}
		frac = frac[:i]
		if len(frac) == 0 {
			leading = 0
		}
	}
	if len(intPart) == 0 {
		b = append(b, '0')
	}
	b = append(b, intPart...)
	if leading+len(frac) == 0 {
		return b
	}
	b = append(b, '.')
	for range leading {
		b = append(b, '0')
	}
	return append(b, frac...)
}

func absInt64(c int64) uint64 {
	if c < 0 {
		return uint64(-c) // math.MinInt64 has 19 digits and never comes here
	}
	return uint64(c)
}
