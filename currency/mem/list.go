package mem

import (
	"context"
	"slices"
	"strings"

	"github.com/bourse/bourse/currency"
)

// Currencies lists every currency, by code.
func (l *Ledger) Currencies(context.Context) ([]currency.Currency, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]currency.Currency, 0, len(l.currencies))
	for _, c := range l.currencies {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b currency.Currency) int { return strings.Compare(string(a.Code), string(b.Code)) })
	return out, nil
}

// Accounts lists a page of accounts in ID order. It sorts every match, which
// is fine for the ledgers the demo and tests hold.
func (l *Ledger) Accounts(_ context.Context, q currency.AccountQuery) ([]currency.Account, error) {
	l.mu.Lock()
	var out []currency.Account
	for _, a := range l.accounts {
		if q.Match(a.Account) {
			out = append(out, a.Account)
		}
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b currency.Account) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out[:min(len(out), q.PageLimit())], nil
}
