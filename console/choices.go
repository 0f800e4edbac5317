package console

import (
	"context"
	"slices"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// A form's owner and currency were free text: a typo was a refused form
// at best, a grant to a new name at worst. The forms offer what exists
// instead: currencies in a select, owners in a datalist (an input that
// suggests, since opening a wallet names an owner that does not exist
// yet).

// choices are the currencies (money, not the caps' own units) and the
// owners of their wallets, by name.
type choices struct {
	Currencies []currency.Code
	Owners     []string
}

// choicePages are the pages whose forms offer choices.
var choicePages = map[string]bool{"overview": true, "allowances": true, "caps": true, "rates": true, "report": true}

// choicesOf lists the choices, reading at most maxWallets wallets.
func choicesOf(ctx context.Context, l currency.Ledger) (choices, error) {
	cs, err := l.Currencies(ctx)
	if err != nil {
		return choices{}, err
	}
	var ch choices
	seen := map[string]bool{}
	n := 0
	for _, cur := range cs {
		if caps.Unit(cur.Code) {
			continue
		}
		ch.Currencies = append(ch.Currencies, cur.Code)
		q := currency.AccountQuery{Currency: cur.Code, Kind: currency.Wallet, Limit: currency.MaxPage}
		for n < maxWallets {
			page, err := l.Accounts(ctx, q)
			if err != nil {
				return choices{}, err
			}
			for _, a := range page {
				if o := owner(a.ID); !seen[o] {
					seen[o] = true
					ch.Owners = append(ch.Owners, o)
				}
			}
			n += len(page)
			if len(page) < q.PageLimit() {
				break
			}
			q.After = page[len(page)-1].ID
		}
	}
	slices.Sort(ch.Owners)
	return ch, nil
}

// picker is a select of currencies: its field's name, its element's id,
// the choice already made (a form that came back) and the choices.
type picker struct {
	Name, ID, Selected string
	Options            []currency.Code
}

// Pick is the currency select of the named form's field name, with
// element id.
func (v *view) Pick(form, name, id string) picker {
	p := picker{Name: name, ID: id, Selected: v.In(form, name, ""), Options: v.Choices.Currencies}
	if p.Selected == "" && len(p.Options) == 1 {
		p.Selected = string(p.Options[0])
	}
	return p
}
