package treasury

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// The trail keeps amounts as the ledger wrote them, without trailing
// zeros ("100", "0.5"): exact, and what a replay compares. A person reads
// money at its currency's places ("100.00"), so the console and bourse
// admin show an action through AtScale.

// settingMoney are the fields of a setting's value (JSON, as the action
// notes it) that are amounts of the action's currency: a spend cap's
// limit, a spend rate's capacity and refill, a top-up's threshold and
// level. A rate, a price or a share is not money.
var settingMoney = map[string][]string{
	settingSpendCap:  {"limit"},
	settingSpendRate: {"capacity", "per_hour"},
	settingTopUp:     {"below", "to"},
}

// actionMoney are the figures an action notes that are amounts of its
// currency: what a top-up or refill moved, what a sale cost.
var actionMoney = map[string]bool{"amount": true, "cost": true}

// Currency is the currency of the action's own amounts (its "amount", a
// sale's "cost", its settings' money): the one its target names (an
// account, or a spend cap's or rate's CODE/owner[/period]), a sale's the
// one it was paid in.
func (a Action) Currency() (currency.Code, bool) {
	switch a.Kind {
	case KindSpendCapSet, KindSpendRateSet, KindSpendRateRefill:
		code, _, ok := strings.Cut(a.Target, "/")
		return currency.Code(code), ok && code != ""
	case KindSale:
		for _, m := range []map[string]string{a.After, a.Before} {
			for k := range m {
				id := currency.AccountID(k)
				if code, ok := id.Currency(); ok && strings.HasPrefix(string(id), string(currency.WalletID(code, "sales:"))) {
					return code, true
				}
			}
		}
		return "", false
	}
	return currency.AccountID(a.Target).Currency()
}

// AtScale is a with the money it noted written at its currencies' places
// (currency.Format), for a person: each account's balance in the
// account's currency, and in the action's own (Currency) what it moved or
// cost and its settings' amounts (settingMoney), their other fields and
// order kept. scaleOf tells a currency's places; an amount of a currency
// it does not know, or finer than its places, stays as it is.
func (a Action) AtScale(scaleOf func(currency.Code) (int32, bool)) Action {
	own, hasOwn := a.Currency()
	at := func(k, v string) string {
		if code, ok := currency.AccountID(k).Currency(); ok {
			return places(v, code, scaleOf)
		}
		if !hasOwn {
			return v
		}
		if actionMoney[k] {
			return places(v, own, scaleOf)
		}
		if fields := settingMoney[k]; fields != nil {
			return fieldsAt(v, fields, func(s string) string { return places(s, own, scaleOf) })
		}
		return v
	}
	rewrite := func(m map[string]string) map[string]string {
		if m == nil {
			return nil
		}
		out := make(map[string]string, len(m))
		for k, v := range m {
			out[k] = at(k, v)
		}
		return out
	}
	a.Before, a.After = rewrite(a.Before), rewrite(a.After)
	return a
}

// places writes the amount s of code at its places, or leaves it.
func places(s string, code currency.Code, scaleOf func(currency.Code) (int32, bool)) string {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return s
	}
	scale, ok := scaleOf(code)
	if !ok {
		return s
	}
	return currency.Format(d, scale)
}

// fieldsAt rewrites the string fields named of a flat JSON object with
// f, keeping the other fields and the order; anything else stays as it
// is.
func fieldsAt(v string, named []string, f func(string) string) string {
	dec := json.NewDecoder(strings.NewReader(v))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return v
	}
	var out bytes.Buffer
	out.WriteByte('{')
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return v
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return v
		}
		var s string
		for _, n := range named {
			if n == name && json.Unmarshal(raw, &s) == nil {
				raw, _ = json.Marshal(f(s))
			}
		}
		if out.Len() > 1 {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		out.Write(k)
		out.WriteByte(':')
		out.Write(raw)
	}
	out.WriteByte('}')
	return out.String()
}
