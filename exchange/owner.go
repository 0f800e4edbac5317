package exchange

import (
	"context"
	"strings"

	"github.com/bourse/bourse/currency"
)

// owners are client and the owners of the wallets above its wallet in
// cur (its project, its organisation), nearest first: the owners of the
// caps an offer of client's is under. Parents never change, so they are
// remembered.
func (h *House) owners(ctx context.Context, client string, cur currency.Code) ([]string, error) {
	key := string(currency.WalletID(cur, client))
	if owners, ok := h.knownOwners(client, cur); ok {
		return owners, nil
	}
	owners := []string{client}
	prefix := string(currency.WalletID(cur, ""))
	id := currency.AccountID(key)
	for range 8 { // a hierarchy is a few levels; a cycle cannot be opened, but stop anyway
		a, err := h.store.Ledger().Account(ctx, id)
		if err != nil {
			return nil, err
		}
		if a.Parent == "" {
			break
		}
		owners = append(owners, strings.TrimPrefix(string(a.Parent), prefix))
		id = a.Parent
	}
	h.parents.Store(key, owners)
	return owners, nil
}

// knownOwners is owners where it needs no I/O: remembered from an
// earlier offer.
func (h *House) knownOwners(client string, cur currency.Code) ([]string, bool) {
	v, ok := h.parents.Load(string(currency.WalletID(cur, client)))
	if !ok {
		return nil, false
	}
	return v.([]string), true
}
