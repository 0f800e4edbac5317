package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// The wire writes a decimal without trailing zeros ("0.5"), whatever the
// currency's scale: exact, and all a program needs. A person reads money
// at the currency's places ("0.50"), in JSON too, so the commands that
// print this protocol's messages as JSON pass them through AtScale.

// moneyKeys are the fields of this protocol's messages (and of the
// ledger's balances and statements, and the treasury's caps, top-ups,
// supply and reports that bourse admin prints) that hold an amount of
// money, never a price or a quantity.
var moneyKeys = map[string]bool{
	"prepayment": true, "prepayments": true, "charge": true, "refund": true, "due": true,
	"available": true, "held": true, "amount": true, "balance": true, "charged": true,
	"limit": true, "used": true, "below": true, "to": true, "capacity": true,
	"supply": true, "change": true, "cost": true, "revenue": true,
}

// accountKeys are the fields that name an account of the object's
// currency (its wallet, a spend-rate bucket, a supply change's account):
// its ID says the currency (wallet/CRED/alice).
var accountKeys = []string{"wallet", "account", "bucket"}

// AtScale rewrites the money in JSON data at its currency's scale: each
// amount field (moneyKeys) of an object whose currency it can tell (its
// own "currency", its terms' or its contract's terms', else the account
// its "wallet", "account" or "bucket" names, else the nearest enclosing
// object's, else cur) with the scale of that currency (the object's own
// "scale" where it has one, else scaleOf). A key that is an account's ID
// (an audit trail's balances, allowances by wallet) puts its value in
// that account's currency: a string there is an amount. An amount finer
// than its scale, or of a currency whose scale is not known, stays as it
// is; a field of moneyKeys that is not a number (a "to" that is a time)
// too. The order of keys is kept; the output is indented as the commands
// print JSON.
func AtScale(data []byte, cur string, scaleOf func(code string) (int32, bool)) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := readNode(dec)
	if err != nil {
		return nil, fmt.Errorf("protocol.AtScale: %w", err)
	}
	root.scale(money{cur: cur}, scaleOf)
	var out bytes.Buffer
	root.write(&out)
	var ind bytes.Buffer
	if err := json.Indent(&ind, out.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("protocol.AtScale: %w", err)
	}
	ind.WriteByte('\n')
	return ind.Bytes(), nil
}

// node is a JSON value with its objects' keys in order.
type node struct {
	keys  []string
	vals  []*node // an object's values, by keys
	elems []*node // an array's
	leaf  json.RawMessage
	kind  byte // '{', '[' or 0 for a leaf
	str   *string
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &node{kind: byte(t)}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			if n.kind == '{' {
				n.vals = append(n.vals, v)
			} else {
				n.elems = append(n.elems, v)
			}
		}
		if _, err := dec.Token(); err != nil && err != io.EOF {
			return nil, err
		}
		return n, nil
	case string:
		b, _ := json.Marshal(t)
		return &node{leaf: b, str: &t}, nil
	default:
		b, err := json.Marshal(t)
		return &node{leaf: b}, err
	}
}

func (n *node) get(path ...string) *node {
	for _, k := range path {
		if n == nil || n.kind != '{' {
			return nil
		}
		var next *node
		for i, key := range n.keys {
			if key == k {
				next = n.vals[i]
			}
		}
		n = next
	}
	return n
}

// money is what an object's amounts are in: a currency, and its scale
// where the message itself says it.
type money struct {
	cur   string
	scale *int32
}

func (n *node) scale(in money, scaleOf func(string) (int32, bool)) {
	switch n.kind {
	case '[':
		for _, e := range n.elems {
			e.scale(in, scaleOf)
		}
		return
	case 0:
		return
	}
	in = n.currency(in)
	if s := n.get("scale"); s != nil && s.kind == 0 {
		if v, err := json.Number(s.leaf).Int64(); err == nil {
			sc := int32(v)
			in.scale = &sc
		}
	}
	for i, k := range n.keys {
		v, at := n.vals[i], in
		code, isAccount := currency.AccountID(k).Currency()
		if isAccount && string(code) != in.cur {
			at = money{cur: string(code)}
		}
		if (!moneyKeys[k] && !isAccount) || v.str == nil {
			v.scale(at, scaleOf)
			continue
		}
		v.atScale(at, scaleOf)
	}
}

// currency is what an object's amounts are in: its own currency, its
// terms' or its contract's terms', the account's it names, else in.
func (n *node) currency(in money) money {
	for _, p := range [][]string{{"currency"}, {"terms", "currency"}, {"contract", "terms", "currency"}} {
		if c := n.get(p...); c != nil && c.str != nil {
			if *c.str != in.cur {
				return money{cur: *c.str}
			}
			return in
		}
	}
	for _, k := range accountKeys {
		if a := n.get(k); a != nil && a.str != nil {
			if code, ok := currency.AccountID(*a.str).Currency(); ok {
				if string(code) != in.cur {
					return money{cur: string(code)}
				}
				return in
			}
		}
	}
	return in
}

// atScale rewrites a string leaf that is an amount of in's currency.
func (n *node) atScale(in money, scaleOf func(string) (int32, bool)) {
	scale, ok := int32(0), false
	if in.scale != nil {
		scale, ok = *in.scale, true
	} else if scaleOf != nil && in.cur != "" {
		scale, ok = scaleOf(in.cur)
	}
	d, err := decimal.NewFromString(*n.str)
	if !ok || err != nil {
		return
	}
	s := currency.Format(d, scale)
	n.str = &s
	n.leaf, _ = json.Marshal(s)
}

func (n *node) write(w *bytes.Buffer) {
	switch n.kind {
	case '{':
		w.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				w.WriteByte(',')
			}
			b, _ := json.Marshal(k)
			w.Write(b)
			w.WriteByte(':')
			n.vals[i].write(w)
		}
		w.WriteByte('}')
	case '[':
		w.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				w.WriteByte(',')
			}
			e.write(w)
		}
		w.WriteByte(']')
	default:
		w.Write(n.leaf)
	}
}
