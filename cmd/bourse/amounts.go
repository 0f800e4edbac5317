package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// How the commands write numbers:
//
//   - money (prepayments, charges, refunds, balances) at its currency's
//     scale, by currency.Format, never rounded: 19.2 CRED at scale 2 is
//     19.20, in tables and in JSON (protocol.AtScale);
//   - prices as the wire has them, per GPU-second, exactly, without
//     trailing zeros (0.200000000000000000 is 0.2), and beside them per
//     GPU-hour, as people compare GPU prices, at the currency's places
//     (currency.FormatPrice): 0.2/GPU-s (720.00/GPU-h);
//   - other quantities exactly.

// exact writes a number as it is, without trailing zeros.
func exact(d decimal.Decimal) string { return d.String() }

// scales learns the scales of currencies from the exchange, whose balance
// reply carries its currency's, once per currency for one command.
type scales struct {
	ctx   context.Context
	c     *bidder.Client
	known map[string]int32 // -1: the exchange did not say
	// lookup, where there is no client, tells a currency's scale (the
	// ledger's, for bourse admin).
	lookup func(code string) (int32, bool)
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
	switch {
	case s.c != nil:
		if b, err := s.c.Balance(s.ctx, code); err == nil {
			v = b.Scale
		}
	case s.lookup != nil:
		if sc, ok := s.lookup(code); ok {
			v = sc
		}
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

// ofCode is of for the treasury, which names currencies by their Code.
func (s *scales) ofCode(c currency.Code) (int32, bool) { return s.of(string(c)) }

// inAccount writes an amount of the currency account id is in (a
// wallet's, a spend-rate bucket's), exactly where the id names none.
func (s *scales) inAccount(d decimal.Decimal, id currency.AccountID) string {
	code, _ := id.Currency()
	return s.amount(d, string(code))
}

// printJSON writes v as indented JSON with its money at its currencies'
// places (protocol.AtScale), as the bid commands' JSON: "0.50", not the
// ledger's "0.5".
func (s *scales) printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if b, err = protocol.AtScale(b, "", s.of); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
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

// secondText describes the price curves as the wire has them, exactly:
// a flat price as one number, a curve by its breakpoints.
func secondText(t contract.Terms) string {
	s := curveText(t.P, exact) + "/GPU-s"
	if len(t.Q) > 0 {
		s += " + " + curveText(t.Q, exact) + "/s"
	}
	return s
}

// price describes the price curves per GPU-second, exactly, and per
// GPU-hour at the places of t's currency.
func (s *scales) price(t contract.Terms) string {
	return secondText(t) + " (" + s.hourText(t) + ")"
}

// perSecond writes one price per GPU-second of currency code as price
// does a flat curve: exactly, and per GPU-hour at the currency's places.
func (s *scales) perSecond(d decimal.Decimal, code string) string {
	scale := int32(-1)
	if s != nil {
		scale, _ = s.of(code)
	}
	return exact(d) + "/GPU-s (" + currency.FormatPrice(contract.PerHour(d), scale) + "/GPU-h)"
}

// hourText is the price curves per GPU-hour (per hour for q).
func (s *scales) hourText(t contract.Terms) string {
	scale := int32(-1)
	if s != nil {
		scale, _ = s.of(t.Currency)
	}
	hour := func(d decimal.Decimal) string { return currency.FormatPrice(contract.PerHour(d), scale) }
	h := curveText(t.P, hour) + "/GPU-h"
	if len(t.Q) > 0 {
		h += " + " + curveText(t.Q, hour) + "/h"
	}
	return h
}

// curveText writes a curve's prices (y) with price: a flat price as one
// number, a curve by its breakpoints x:y.
func curveText(c contract.Curve, price func(decimal.Decimal) string) string {
	if len(c) == 1 && c[0].X.IsZero() {
		return price(c[0].Y)
	}
	var ps []string
	for _, p := range c {
		ps = append(ps, exact(p.X)+":"+price(p.Y))
	}
	return "[" + strings.Join(ps, ",") + "]"
}
