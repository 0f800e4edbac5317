package treasury

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// Cap is a client's concurrent-GPU cap: InUse GPUs held by its running
// contracts out of GPUs.
type Cap struct {
	Client string `json:"client"`
	GPUs   int64  `json:"gpus"`
	InUse  int64  `json:"in_use"`
}

// SetCap makes client's concurrent-GPU cap gpus (see exchange.SetGPUCap:
// the cap is the client's wallet in GPU-CAP, minted up to the cap or
// burned down to it). Lowering it below the GPUs in use is EConflict
// until enough contracts end.
func (t *Treasury) SetCap(ctx context.Context, actor, client string, gpus int, key string) (Action, error) {
	op := "treasury." + KindCapSet
	if gpus < 0 {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "gpus", Message: fmt.Sprintf("a cap of %d GPUs", gpus)}
	}
	if err := t.l.CreateCurrency(ctx, currency.Currency{Code: exchange.GPUCap, Scale: 0}); err != nil {
		return Action{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	w := exchange.CapWallet(client)
	if _, err := t.l.OpenAccount(ctx, currency.Account{ID: w, Currency: exchange.GPUCap, Kind: currency.Wallet}); err != nil {
		return Action{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	bal, err := t.l.Balance(ctx, w)
	if err != nil {
		return Action{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	// What to mint or burn is decided on the balance read here; the
	// ledger's own check that a wallet covers what leaves it keeps a cap
	// from going below the GPUs in use if contracts start meanwhile.
	old := bal.Available.Add(bal.Held)
	delta := decimal.NewFromInt(int64(gpus)).Sub(old)
	memo := fmt.Sprintf("cap of %s set to %d GPUs", client, gpus)
	var ops []currency.Op
	switch {
	case delta.IsNegative() && bal.Available.LessThan(delta.Neg()):
		return Action{}, &bourse.Error{Code: bourse.EConflict, Op: op, Field: "gpus",
			Message: fmt.Sprintf("%s holds %s GPUs in contracts now: a cap of %d waits until they end", client, bal.Held, gpus)}
	case delta.IsNegative():
		ops = append(ops, currency.Transfer{Key: key, From: w, To: currency.IssuanceID(exchange.GPUCap), Amount: delta.Neg(), Memo: memo})
	case delta.IsPositive():
		ops = append(ops, currency.Transfer{Key: key, From: currency.IssuanceID(exchange.GPUCap), To: w, Amount: delta, Memo: memo})
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindCapSet, Target: client,
			Request: fmt.Sprintf("cap %s %d", client, gpus),
			Before:  map[string]string{"cap": old.String(), "in_use": bal.Held.String()},
			After:   map[string]string{"cap": fmt.Sprint(gpus)}},
		Ops:   ops,
		Watch: []currency.AccountID{w},
	})
}

// Caps lists every client's cap.
func (t *Treasury) Caps(ctx context.Context) ([]Cap, error) {
	var out []Cap
	q := currency.AccountQuery{Currency: exchange.GPUCap, Kind: currency.Wallet, Limit: currency.MaxPage}
	for {
		page, err := t.l.Accounts(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("caps: %w", err)
		}
		for _, a := range page {
			b, err := t.l.Balance(ctx, a.ID)
			if err != nil {
				return nil, fmt.Errorf("cap %s: %w", a.ID, err)
			}
			client := string(a.ID)[len(exchange.CapWallet("")):]
			out = append(out, Cap{Client: client, GPUs: b.Available.Add(b.Held).IntPart(), InUse: b.Held.IntPart()})
		}
		if len(page) < q.PageLimit() {
			return out, nil
		}
		q.After = page[len(page)-1].ID
	}
}
