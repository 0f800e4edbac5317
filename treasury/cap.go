package treasury

import (
	"context"
	"fmt"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// Cap is a client's concurrent-GPU cap: InUse GPUs held by its running
// contracts out of GPUs.
type Cap struct {
	Client string `json:"client"`
	GPUs   int64  `json:"gpus"`
	InUse  int64  `json:"in_use"`
}

// SetCap makes client's concurrent-GPU cap gpus: the cap is the client's
// wallet in GPU-CAP (caps.GPUWallet), minted up to the cap or burned
// down to it by the difference from the cap as the transaction that moves
// it reads it (caps.SetGPUs), so that two administrators at once set it
// once. Lowering it below the GPUs in use is EConflict until enough
// contracts end.
func (t *Treasury) SetCap(ctx context.Context, actor, client string, gpus int, key string) (Action, error) {
	op := "treasury." + KindCapSet
	if gpus < 0 {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "gpus", Message: fmt.Sprintf("a cap of %d GPUs", gpus)}
	}
	w, err := caps.OpenGPUWallet(ctx, t.l, client)
	if err != nil {
		return Action{}, fmt.Errorf("%s: %w", op, err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindCapSet, Target: client,
			Request: fmt.Sprintf("cap %s %d", client, gpus), After: map[string]string{"cap": fmt.Sprint(gpus)}},
		Watch: []currency.AccountID{w},
		Plan: func(ctx context.Context, v View, c *Change) error {
			ch, err := caps.SetGPUs(ctx, v, client, gpus, key)
			if err != nil {
				return withOp(op, err)
			}
			c.Action.Before["cap"], c.Action.Before["in_use"] = ch.Cap.String(), ch.InUse.String()
			c.Ops = ch.Ops
			return nil
		},
	})
}

// CapOf is client's cap as it stands (zero GPUs where none was set).
func (t *Treasury) CapOf(ctx context.Context, client string) (Cap, error) {
	b, err := t.l.Balance(ctx, caps.GPUWallet(client))
	if err != nil {
		return Cap{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	return capOf(client, b), nil
}

// capOf is a cap from its wallet's balance: GPUs free and held are the
// cap, those held in use.
func capOf(client string, b currency.Balance) Cap {
	return Cap{Client: client, GPUs: b.Available.Add(b.Held).IntPart(), InUse: b.Held.IntPart()}
}

// Caps lists every client's cap.
func (t *Treasury) Caps(ctx context.Context) ([]Cap, error) {
	var out []Cap
	q := currency.AccountQuery{Currency: caps.GPUCode, Kind: currency.Wallet, Limit: currency.MaxPage}
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
			out = append(out, capOf(caps.GPUOwner(a.ID), b))
		}
		if len(page) < q.PageLimit() {
			return out, nil
		}
		q.After = page[len(page)-1].ID
	}
}
