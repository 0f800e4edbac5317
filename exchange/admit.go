package exchange

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// funds is what admit reads before it decides: the owners of the caps
// above a client's wallet (owners) and the balances of the wallet and of
// their GPU wallets, in that order (fundsOf).
type funds struct {
	owners []string
	bals   []currency.Balance
}

// fundsOf are the accounts admit reads for an offer of client's in cur:
// its wallet, then the GPU wallet of each owner, nearest first.
func fundsOf(client string, cur currency.Code, owners []string) []currency.AccountID {
	ids := make([]currency.AccountID, 1, 1+len(owners))
	ids[0] = currency.WalletID(cur, client)
	for _, o := range owners {
		ids = append(ids, caps.GPUWallet(o))
	}
	return ids
}

// admit checks that client can pay for t and that its caps let t
// through: its funds and every concurrent-GPU cap above it read in one
// go (on a database, one round trip), or read already with the offer's
// lock (pre, from Store.LockFunds; nil if not). It returns the caps'
// admission, whose reserves the escrow makes, and the wallet's available
// balance. This is a cheap early no; the binding check is the escrow's
// own.
func (h *House) admit(ctx context.Context, client string, t contract.Terms, pre *funds) (caps.Admission, decimal.Decimal, error) {
	cur := currency.Code(t.Currency)
	noWallet := &bourse.Error{Code: bourse.ENotFound, Field: "terms.client",
		Message: fmt.Sprintf("client %s has no %s wallet; an administrator opens one", client, t.Currency)}
	if pre == nil {
		owners, err := h.owners(ctx, client, cur)
		if bourse.ErrorCode(err) == bourse.ENotFound {
			return caps.Admission{}, decimal.Zero, noWallet
		} else if err != nil {
			return caps.Admission{}, decimal.Zero, err
		}
		bals, err := h.store.Ledger().Balances(ctx, fundsOf(client, cur, owners)...)
		if err != nil {
			return caps.Admission{}, decimal.Zero, err
		}
		pre = &funds{owners: owners, bals: bals}
	}
	owners, bals := pre.owners, pre.bals
	bal := bals[0]
	if bal.Account == "" {
		return caps.Admission{}, decimal.Zero, noWallet
	}
	scale, ok := h.scaleOf(ctx)(t.Currency) // looked up already: cached
	if !ok {
		scale = -1 // written exactly
	}
	if bal.Available.LessThan(t.Prepayment) {
		return caps.Admission{}, decimal.Zero, &bourse.Error{Code: bourse.EInsufficientFunds, Field: "terms.prepayment",
			Message: fmt.Sprintf("prepayment %s exceeds the available %s %s", currency.Format(t.Prepayment, scale), currency.Format(bal.Available, scale), t.Currency)}
	}
	adm, err := h.cfg.Periods.Admit(ctx, h.store.Ledger(), h.cfg.SpendCaps,
		caps.Offer{Owners: owners, Currency: cur, GPUs: t.GPUs, Prepayment: t.Prepayment, Scale: scale}, bals[1:])
	return adm, bal.Available, err
}
