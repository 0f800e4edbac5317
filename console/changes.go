package console

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

// The audit trail's "changed" was treasury.Action.Changes, a list of
// keys and raw values ("spend-cap: {"limit":"150","warn":"0.8"}") that
// only someone who knew the treasury's records could read. changed
// writes the same Before and After as a sentence: accounts by what they
// are (alice's CRED wallet, the CRED supply) with their currency's
// places, settings by their fields.

// settingNames are the settings and figures an action notes, as a
// sentence names them.
var settingNames = map[string]string{
	"allowance": "the allowance", "spend-cap": "the spend cap", "spend-rate": "the spend rate", "topup": "the top-up",
	"rate": "the rate", "price": "the price", "cap": "the GPU cap", "cost": "the cost", "amount": "the amount",
	"scale": "the scale",
}

// changed says what a did, in one sentence; scales are the currencies'
// places, by code.
func changed(a treasury.Action, scales map[currency.Code]int32) string {
	// Settings' money (a spend cap's limit, a top-up's level) and what an
	// action moved or cost, at their currency's places too.
	a = a.AtScale(func(c currency.Code) (int32, bool) { s, ok := scales[c]; return s, ok })
	all := maps.Clone(a.After)
	if all == nil {
		all = map[string]string{}
	}
	maps.Copy(all, a.Before)
	keys := slices.Sorted(maps.Keys(all))
	// Settings first, then the accounts' balances, the supply last.
	slices.SortStableFunc(keys, func(x, y string) int { return cmp.Compare(rank(x), rank(y)) })
	var clauses []string
	for _, k := range keys {
		b, hadB := a.Before[k]
		n, hasN := a.After[k]
		if hadB && hasN && b == n {
			continue
		}
		if isAccount(k) {
			clauses = append(clauses, accountClause(currency.AccountID(k), b, n, hadB, hasN, scales))
		} else {
			clauses = append(clauses, settingClause(k, b, n, hadB, hasN))
		}
	}
	if len(clauses) == 0 {
		return ""
	}
	s := strings.Join(clauses, "; ") + "."
	return strings.ToUpper(s[:1]) + s[1:]
}

func rank(k string) int {
	switch {
	case !isAccount(k):
		return 0
	case strings.HasPrefix(k, string(currency.Issuance)+"/"):
		return 2
	}
	return 1
}

// isAccount tells an account's balance (kind/CODE/owner) from a setting.
func isAccount(k string) bool { return strings.Contains(k, "/") }

// accountClause says how an account's balance moved.
func accountClause(id currency.AccountID, b, n string, hadB, hasN bool, scales map[currency.Code]int32) string {
	parts := strings.SplitN(string(id), "/", 3)
	code := currency.Code(parts[1])
	label, neg := string(id), false
	switch {
	case parts[0] == string(currency.Issuance):
		label, neg = "the "+string(code)+" supply", true
	case len(parts) == 3 && parts[0] == string(currency.Wallet) && caps.Unit(code):
		label = parts[2] + "'s " + string(code) + " account"
	case len(parts) == 3 && parts[0] == string(currency.Wallet):
		label = parts[2] + "'s " + string(code) + " wallet"
	case len(parts) == 3 && parts[0] == string(currency.Revenue):
		label = parts[2] + "'s " + string(code) + " revenue"
	}
	amount := func(s string) string {
		d, err := decimal.NewFromString(s)
		if err != nil {
			return s
		}
		if neg {
			d = d.Neg()
		}
		return money(d, code, scales)
	}
	switch {
	case hadB && hasN:
		return fmt.Sprintf("%s went from %s to %s", label, amount(b), amount(n))
	case hasN:
		return fmt.Sprintf("%s is %s", label, amount(n))
	}
	return fmt.Sprintf("%s was %s", label, amount(b))
}

// settingClause says how a setting or figure changed.
func settingClause(k, b, n string, hadB, hasN bool) string {
	switch k {
	case "parent": // an opening's
		if n == "" {
			return "opened at the top, under no other wallet"
		}
		return "opened under " + n
	case "in_use": // noted beside a GPU cap
		return b + " GPUs in use"
	}
	name, ok := settingNames[k]
	if !ok {
		name = strings.ReplaceAll(k, "_", " ")
	}
	switch {
	case hadB && hasN:
		return fmt.Sprintf("%s changed from %s to %s", name, fieldsOf(b), fieldsOf(n))
	case hasN:
		return fmt.Sprintf("%s set to %s", name, fieldsOf(n))
	}
	return fmt.Sprintf("%s removed (it was %s)", name, fieldsOf(b))
}

// fieldsOf writes a setting's value: a JSON object's fields in their
// order ("limit 150, warn 0.8"), with durations in seconds (a name
// ending _s) and times as the console writes them; anything else as it
// is.
func fieldsOf(v string) string {
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return v
	}
	var parts []string
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
		parts = append(parts, fieldOf(name, raw))
	}
	return strings.Join(parts, ", ")
}

func fieldOf(name string, raw json.RawMessage) string {
	var s string
	var n json.Number
	switch {
	case json.Unmarshal(raw, &s) == nil:
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			s = t.UTC().Format("2006-01-02 15:04:05") + " UTC"
		}
	case strings.HasSuffix(name, "_s") && json.Unmarshal(raw, &n) == nil:
		if secs, err := n.Float64(); err == nil {
			name, s = strings.TrimSuffix(name, "_s"), shortDuration(time.Duration(secs*float64(time.Second)))
		}
	default:
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			s = buf.String()
		}
	}
	return strings.ReplaceAll(name, "_", " ") + " " + s
}

// shortDuration is d without its zero minutes and seconds: 1h, not 1h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
