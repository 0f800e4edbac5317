package treasury

import (
	"context"
	"fmt"

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
	op, bal, err := exchange.CapChange(ctx, t.l, client, gpus, key)
	if err != nil {
		return Action{}, fmt.Errorf("treasury.%s: %w", KindCapSet, err)
	}
	var ops []currency.Op
	if op != nil {
		ops = append(ops, op)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindCapSet, Target: client,
			Request: fmt.Sprintf("cap %s %d", client, gpus),
			Before:  map[string]string{"cap": bal.Available.Add(bal.Held).String(), "in_use": bal.Held.String()},
			After:   map[string]string{"cap": fmt.Sprint(gpus)}},
		Ops:   ops,
		Watch: []currency.AccountID{exchange.CapWallet(client)},
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
