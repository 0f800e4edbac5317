package currency

import (
	"strings"

	"github.com/shopspring/decimal"
)

// Format writes an amount of money in a currency of scale decimal places,
// the one way every command and page writes money: 19.2 at scale 2 is
// 19.20. It never rounds: an amount with more places than the scale,
// which no ledger holds, is written whole, as is any amount whose scale
// is unknown (a negative scale).
func Format(d decimal.Decimal, scale int32) string {
	if scale < 0 || !d.Equal(d.Truncate(scale)) {
		return d.String()
	}
	return d.StringFixed(scale)
}

// FormatPrice writes a price (per GPU-hour, say) in a currency of scale
// decimal places, for a person: at the scale, rounded half away from
// zero, with more places only where the scale would show fewer than two
// significant digits (a price below the currency's smallest amount is
// not 0.00). Unlike money a price may be finer than the currency: where
// exactness matters the price per GPU-second, exact, stands beside it.
// A negative scale (unknown) writes it exactly.
func FormatPrice(d decimal.Decimal, scale int32) string {
	if scale < 0 {
		return d.String()
	}
	return d.StringFixed(PricePlaces(scale, d))
}

// A column of prices is written with the same places on every line, so
// that its points line up and no figure looks rounder than its
// neighbour (181 beside 184.5). Two rules say how many, one for each
// need, and every command and page takes its places from one of them:
//
//   - PricePlaces, for prices a person compares (the market's low,
//     median, high and VWAP): the currency's places, rounded, more only
//     to keep two significant digits;
//   - ExactPlaces, where prices that differ must not print alike (the
//     book's levels) or a figure has no currency to round to (a rate, a
//     decay rate): each written in full.

// PricePlaces is how many places FormatPrice writes prices ds with, all
// alike so that a column of them lines up: scale, or more where one of
// them needs it for two significant digits, at most scale + 8.
func PricePlaces(scale int32, ds ...decimal.Decimal) int32 {
	places := max(scale, 0)
	most := places + 8
	ten := decimal.NewFromInt(10)
	for _, d := range ds {
		d = d.Abs()
		if d.IsZero() {
			continue
		}
		need := places
		for need < most && d.Shift(need).LessThan(ten) {
			need++
		}
		places = max(places, need)
	}
	return places
}

// ExactPlaces is how many places write every figure of ds in full, all
// alike so that a column of them lines up: the most that any of them
// needs, and at least scale (none where scale is unknown, negative).
// 0.5 and 0.25 are 0.50 and 0.25.
func ExactPlaces(scale int32, ds ...decimal.Decimal) int32 {
	places := max(scale, 0)
	for _, d := range ds {
		if _, frac, ok := strings.Cut(d.String(), "."); ok {
			places = max(places, int32(len(frac)))
		}
	}
	return places
}
