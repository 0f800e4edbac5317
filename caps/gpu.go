package caps

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
)

// checkGPUs refuses an offer of gpus that would take a client, or the
// project or organisation its wallet sits under (owners, nearest first),
// past a concurrent-GPU cap; caps[i] is the balance of owners[i]'s
// GPUWallet, with no Account where it has none. capped are the owners
// that have one, nearest first.
func checkGPUs(owners []string, caps []currency.Balance, gpus int) (capped []string, err error) {
	for i, o := range owners {
		bal := caps[i]
		if bal.Account == "" {
			continue
		}
		if bal.Available.LessThan(decimal.NewFromInt(int64(gpus))) {
			return nil, gpusExceeded(o, bal, gpus)
		}
		capped = append(capped, o)
	}
	return capped, nil
}

// GPUChange is what setting a concurrent-GPU cap does, decided on its
// wallet as a transaction reads it.
type GPUChange struct {
	// Cap and InUse are the cap before the change and the GPUs its
	// owner's contracts hold.
	Cap, InUse decimal.Decimal
	// Ops mint the cap's wallet up to the new cap or burn it down; none
	// where it is the cap already.
	Ops []currency.Op
}

// SetGPUs is what makes owner's concurrent-GPU cap gpus, under key: the
// cap's wallet (GPUWallet, open already) minted or burned by the
// difference from the cap as tx reads it, free and held together, so
// that two administrators at once set it once. Lowering it below the
// GPUs in use is EConflict until enough contracts end.
func SetGPUs(ctx context.Context, tx currency.TxReader, owner string, gpus int, key string) (GPUChange, error) {
	w := GPUWallet(owner)
	free, _, err := tx.Balance(ctx, w)
	if err != nil {
		return GPUChange{}, err
	}
	held, err := tx.Held(ctx, w)
	if err != nil {
		return GPUChange{}, err
	}
	ch := GPUChange{Cap: free.Add(held), InUse: held}
	t := currency.Transfer{Key: key, From: currency.IssuanceID(GPUCode), To: w, Memo: fmt.Sprintf("cap of %s set to %d GPUs", owner, gpus)}
	switch delta := decimal.NewFromInt(int64(gpus)).Sub(ch.Cap); {
	case delta.IsPositive():
		t.Amount = delta
	case delta.IsNegative() && free.LessThan(delta.Neg()):
		return GPUChange{}, &bourse.Error{Code: bourse.EConflict, Field: "gpus",
			Message: fmt.Sprintf("%s holds %s GPUs in contracts now: a cap of %d waits until they end", owner, held, gpus)}
	case delta.IsNegative():
		t.From, t.To, t.Amount = w, currency.IssuanceID(GPUCode), delta.Neg()
	default:
		return ch, nil
	}
	ch.Ops = []currency.Op{t}
	return ch, nil
}
