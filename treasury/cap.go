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

// SetCap makes client's concurrent-GPU cap gpus: the cap is the client's
// wallet in GPU-CAP (exchange.CapWallet), minted up to the cap or burned
// down to it by the difference from the cap as the transaction that moves
// it reads it, so that two administrators at once set it once. Lowering
// it below the GPUs in use is EConflict until enough contracts end.
func (t *Treasury) SetCap(ctx context.Context, actor, client string, gpus int, key string) (Action, error) {
	op := "treasury." + KindCapSet
	if gpus < 0 {
		return Action{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "gpus", Message: fmt.Sprintf("a cap of %d GPUs", gpus)}
	}
	w, err := exchange.OpenCapWallet(ctx, t.l, client)
	if err != nil {
		return Action{}, fmt.Errorf("%s: %w", op, err)
	}
	return t.commit(ctx, Change{
		Action: Action{Key: key, Actor: actor, Kind: KindCapSet, Target: client,
			Request: fmt.Sprintf("cap %s %d", client, gpus), After: map[string]string{"cap": fmt.Sprint(gpus)}},
		Watch: []currency.AccountID{w},
		Plan: func(ctx context.Context, v View, c *Change) error {
			free, _, err := v.Balance(ctx, w)
			if err != nil {
				return err
			}
			held, err := v.Held(ctx, w)
			if err != nil {
				return err
			}
			c.Action.Before["cap"], c.Action.Before["in_use"] = free.Add(held).String(), held.String()
			tr := currency.Transfer{Key: key, From: currency.IssuanceID(exchange.GPUCap), To: w, Memo: fmt.Sprintf("cap of %s set to %d GPUs", client, gpus)}
			switch delta := decimal.NewFromInt(int64(gpus)).Sub(free.Add(held)); {
			case delta.IsPositive():
				tr.Amount = delta
			case delta.IsNegative() && free.LessThan(delta.Neg()):
				return &bourse.Error{Code: bourse.EConflict, Op: op, Field: "gpus",
					Message: fmt.Sprintf("%s holds %s GPUs in contracts now: a cap of %d waits until they end", client, held, gpus)}
			case delta.IsNegative():
				tr.From, tr.To, tr.Amount = w, currency.IssuanceID(exchange.GPUCap), delta.Neg()
			default:
				return nil
			}
			c.Ops = []currency.Op{tr}
			return nil
		},
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
