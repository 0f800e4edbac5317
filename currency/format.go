package currency

import "github.com/shopspring/decimal"

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
