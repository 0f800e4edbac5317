package main

import (
	"context"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/currency"
)

// How the commands write numbers, never rounding one:
//
//   - money (prepayments, charges, refunds, balances) at its currency's
//     scale, by currency.Format: 19.2 CRED at scale 2 is 19.20;
//   - prices and other quantities exactly, without trailing zeros: a
//     price per GPU-second of 0.200000000000000000 is 0.2.

// exact writes a number as it is, without trailing zeros.
func exact(d decimal.Decimal) string { return d.String() }

// scales learns the scales of currencies from the exchange, whose balance
// reply carries its currency's, once per currency for one command.
type scales struct {
	ctx   context.Context
	c     *bidder.Client
	known map[string]int32 // -1: the exchange did not say
}

func newScales(ctx context.Context, c *bidder.Client) *scales {
	return &scales{ctx: ctx, c: c, known: map[string]int32{}}
}

// of is the scale of the currency code, if the exchange tells it (it does
// not where the client has no wallet in it).
func (s *scales) of(code string) (int32, bool) {
	if v, ok := s.known[code]; ok {
		return v, v >= 0
	}
	v := int32(-1)
	if b, err := s.c.Balance(s.ctx, code); err == nil {
		v = b.Scale
	}
	s.known[code] = v
	return v, v >= 0
}

// amount writes an amount of the currency code at its scale, or exactly
// where the scale is not known.
func (s *scales) amount(d decimal.Decimal, code string) string {
	scale, _ := s.of(code) // -1 where unknown: written exactly
	return currency.Format(d, scale)
}

// money writes an amount, "-" where it is not known yet.
func (s *scales) money(d decimal.Decimal, code string, known bool) string {
	if !known {
		return "-"
	}
	return s.amount(d, code)
}

// amount reads a decimal flag or argument (named flag in the error), for
// every command that takes money, prices or rates.
func amount(flag, s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(strings.TrimSpace(s))
	if err != nil {
		return decimal.Zero, usagef("%s %q is not a decimal number like 0.30", flag, s)
	}
	return d, nil
}
