// Package dectest gives tests their decimals: D reads one written as a
// string, the way a test writes money and prices, and panics on a typo.
// It is the one such helper; a test package needs no copy of its own.
package dectest

import "github.com/shopspring/decimal"

// D is the decimal s says ("0.30", "-1e3"); it panics if s is not one.
func D(s string) decimal.Decimal { return decimal.RequireFromString(s) }
