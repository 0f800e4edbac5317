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

// OpenCapWallet makes the cap currency and client's cap wallet where
// they are missing, and returns the wallet.
func OpenCapWallet(ctx context.Context, l currency.Ledger, client string) (currency.AccountID, error) {
	if err := l.CreateCurrency(ctx, currency.Currency{Code: GPUCap, Scale: 0}); err != nil {
		return "", fmt.Errorf("cap of %s: %w", client, err)
	}
	w := CapWallet(client)
	if _, err := l.OpenAccount(ctx, currency.Account{ID: w, Currency: GPUCap, Kind: currency.Wallet}); err != nil {
		return "", fmt.Errorf("cap of %s: %w", client, err)
	}
	return w, nil
}

// capReserves are the reserves of a contract's GPUs from the caps above
// it, nearest first, their holds noted on c (CapHolds): the client's own
// (hold gpus/<contract>, as before caps had parents), and its project's or
// organisation's (gpus/<contract>/<owner>).
func capReserves(c *trade.Contract, offerID string, capped []string, deadline time.Time) []currency.Reserve {
	var out []currency.Reserve
	for _, o := range capped {
		key, hold := "cap-reserve/"+offerID, "gpus/"+c.ID
		if o != c.Client {
			key, hold = key+"/"+o, hold+"/"+o
		}
		c.CapHolds = append(c.CapHolds, hold)
		out = append(out, currency.Reserve{Key: key, Hold: currency.HoldID(hold), From: CapWallet(o),
			Amount: decimal.NewFromInt(int64(c.Terms.GPUs)), Deadline: deadline.Add(capHoldGrace), Memo: "GPUs of contract " + c.ID})
	}
	return out
}

// capRelease gives an ended contract's GPUs back to the caps it held them
// from, where each hold is still open (IfOpen, decided in the ledger's
// transaction): a contract stuck past its escrow's deadline and the cap's
// grace has had the cap's holds expired by the watchdog already (as holds
// no contract owns), and its settlement must not then fail on them. So
// the change that settles a contract reads nothing outside its store.
// The keys are those every version used: cap-release/<contract> for the
// client's own cap, cap-release/<contract>/<owner> for a parent's.
func capRelease(c *trade.Contract) []currency.Op {
	var ops []currency.Op
	own := "gpus/" + c.ID
	for _, hold := range c.CapHolds {
		key := "cap-release/" + c.ID
		if hold != own {
			key += "/" + strings.TrimPrefix(hold, own+"/")
		}
		ops = append(ops, currency.Void{Key: key, Hold: currency.HoldID(hold), Memo: "contract " + c.ID + " ended", IfOpen: true})
	}
	return ops
}
