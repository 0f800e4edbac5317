package console

import (
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// Every number in a column is written alike, so that its points line up
// and no figure looks rounder than its neighbour (181 beside 184.5):
// money with its currency's places, always; other figures (rates,
// prices, decay rates) with the most places any of the column needs.

// money is d in cur's places (currency.Format), or as it is where cur is
// unknown.
func money(d decimal.Decimal, cur currency.Code, scales map[currency.Code]int32) string {
	scale, ok := scales[cur]
	if !ok {
		scale = -1
	}
	return currency.Format(d, scale)
}

// column writes ds alike, each in full (currency.ExactPlaces): 0.5 and
// 0.25 are 0.50 and 0.25.
func column(ds []decimal.Decimal) []string {
	places := currency.ExactPlaces(0, ds...)
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.StringFixed(places)
	}
	return out
}
