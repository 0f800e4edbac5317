package exchange

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/trade"
)

// GPUCap is the unit currency of concurrent-GPU caps. A client with a
// wallet in it may hold at most that wallet's balance of GPUs in
// contracts at once: each contract reserves its GPUs from the wallet in
// the same ledger transaction as its prepayment's escrow, so the check
// and the escrow cannot race, and gives them back when it ends. A client
// without such a wallet has no cap. bourse admin cap sets one.
const GPUCap currency.Code = "GPU-CAP"

// CapWallet is client's concurrent-GPU cap account.
func CapWallet(client string) currency.AccountID { return currency.WalletID(GPUCap, client) }

// capHoldGrace is how long a cap's hold outlives its contract's escrow:
// the contract always ends first, releasing it, even by the fixed rule.
const capHoldGrace = time.Hour

// checkCap refuses an offer that would take a client, or the project or
// organisation its wallet sits under (owners, nearest first), past a
// concurrent-GPU cap, before the negotiation; caps[i] is the balance of
// owners[i]'s cap wallet (CapWallet), with no Account where it has none.
// capped are the owners that have one, nearest first.
func checkCap(owners []string, caps []currency.Balance, gpus int) (capped []string, err error) {
	for i, o := range owners {
		bal := caps[i]
		if bal.Account == "" {
			continue
		}
		if bal.Available.LessThan(decimal.NewFromInt(int64(gpus))) {
			return nil, capExceeded(o, bal, gpus)
		}
		capped = append(capped, o)
	}
	return capped, nil
}

func capExceeded(owner string, bal currency.Balance, gpus int) error {
	total := bal.Available.Add(bal.Held)
	return &bourse.Error{Code: bourse.ECapExceeded, Field: "terms.gpus",
		Message: fmt.Sprintf("concurrent-GPU cap of %s: %s of %s GPUs in use, %d more asked; GPUs free as contracts end", owner, bal.Held, total, gpus)}
}

// SetGPUCap makes client's concurrent-GPU cap n, under idempotency key
// key: the cap currency and the client's cap wallet are made where they
// are missing, and the wallet is minted up to n (or burned down to it)
// from the currency's issuance account. Lowering a cap below the GPUs in
// use is refused until enough contracts end: held GPUs cannot be burned.
// It returns the cap wallet's balance after. (Administrators set caps
// through treasury.SetCap, which records them in the audit trail.)
func SetGPUCap(ctx context.Context, l currency.Ledger, client string, n int, key string) (currency.Balance, error) {
	op, bal, err := CapChange(ctx, l, client, n, key)
	if err != nil || op == nil {
		return bal, err
	}
	if _, err := currency.Do(ctx, l, op); err != nil {
		return bal, fmt.Errorf("cap of %s: %w", client, err)
	}
	return l.Balance(ctx, CapWallet(client))
}

// CapChange is the transfer that makes client's cap n (nil if it is n
// already), with the cap wallet's balance now: the cap currency and the
// wallet are made where they are missing. The transfer is decided on the
// balance read here; the ledger's check that a wallet covers what leaves
// it keeps a cap from going below the GPUs in use if contracts start
// before it applies.
func CapChange(ctx context.Context, l currency.Ledger, client string, n int, key string) (currency.Op, currency.Balance, error) {
	if n < 0 {
		return nil, currency.Balance{}, &bourse.Error{Code: bourse.EInvalid, Field: "gpus", Message: fmt.Sprintf("a cap of %d GPUs", n)}
	}
	if err := l.CreateCurrency(ctx, currency.Currency{Code: GPUCap, Scale: 0}); err != nil {
		return nil, currency.Balance{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	w := CapWallet(client)
	if _, err := l.OpenAccount(ctx, currency.Account{ID: w, Currency: GPUCap, Kind: currency.Wallet}); err != nil {
		return nil, currency.Balance{}, fmt.Errorf("cap of %s: %w", client, err)
	}
	bal, err := l.Balance(ctx, w)
	if err != nil {
		return nil, currency.Balance{}, err
	}
	delta := decimal.NewFromInt(int64(n)).Sub(bal.Available.Add(bal.Held))
	t := currency.Transfer{Key: key, From: currency.IssuanceID(GPUCap), To: w, Amount: delta, Memo: fmt.Sprintf("cap of %s set to %d GPUs", client, n)}
	switch {
	case delta.IsZero():
		return nil, bal, nil
	case delta.IsNegative() && bal.Available.LessThan(delta.Neg()):
		return nil, bal, &bourse.Error{Code: bourse.EConflict, Field: "gpus",
			Message: fmt.Sprintf("%s holds %s GPUs in contracts now: a cap of %d waits until they end", client, bal.Held, n)}
	case delta.IsNegative():
		t.From, t.To, t.Amount = w, currency.IssuanceID(GPUCap), delta.Neg()
	}
	return t, bal, nil
}

// capReserves are the reserves of a contract's GPUs from the caps above
// it: the client's own (hold gpus/<contract>, as before caps had
// parents), and its project's or organisation's (gpus/<contract>/<owner>).
func capReserves(c *trade.Contract, offerID string, capped []string, deadline time.Time) []currency.Reserve {
	var out []currency.Reserve
	for _, o := range capped {
		key, hold := "cap-reserve/"+offerID, "gpus/"+c.ID
		if o == c.Client {
			c.CapHold = hold
		} else {
			key, hold = key+"/"+o, hold+"/"+o
			c.CapHolds = append(c.CapHolds, hold)
		}
		out = append(out, currency.Reserve{Key: key, Hold: currency.HoldID(hold), From: CapWallet(o),
			Amount: decimal.NewFromInt(int64(c.Terms.GPUs)), Deadline: deadline.Add(capHoldGrace), Memo: "GPUs of contract " + c.ID})
	}
	return out
}

// capRelease gives an ended contract's GPUs back to the caps it held them
// from, where each hold is still open: a contract stuck past its escrow's
// deadline and the cap's grace has had the cap's holds expired by the
// watchdog already (as holds no contract owns), and its settlement must
// not then fail on them. A hold expired between this look and the
// settlement fails that attempt once; the next finds it resolved.
func (h *House) capRelease(c *trade.Contract) []currency.Op {
	var ops []currency.Op
	for i, id := range append([]string{c.CapHold}, c.CapHolds...) {
		if id == "" {
			continue
		}
		if !h.holdOpen(id) {
			continue
		}
		key := "cap-release/" + c.ID
		if i > 0 {
			key += "/" + strings.TrimPrefix(id, "gpus/"+c.ID+"/")
		}
		ops = append(ops, currency.Void{Key: key, Hold: currency.HoldID(id), Memo: "contract " + c.ID + " ended"})
	}
	return ops
}

// holdOpen reports whether a contract's hold on a cap or a spend budget
// still needs resolving: not when it is resolved already, or forgotten
// (only resolved holds are). An error reading it counts as open: the
// settlement then tries, and fails (and is retried) if it is not.
func (h *House) holdOpen(id string) bool {
	hold, err := h.store.Ledger().Hold(context.Background(), currency.HoldID(id))
	return !(bourse.ErrorCode(err) == bourse.ENotFound || err == nil && hold.Status != currency.HoldOpen)
}
