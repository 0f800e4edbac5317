package treasury

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/currency"
)

// SupplyPoint is the money supply of a currency after one mint or burn:
// the issuance account's statement, negated.
type SupplyPoint struct {
	At     time.Time       `json:"at"`
	Supply decimal.Decimal `json:"supply"`
	Change decimal.Decimal `json:"change"`
	// Account is where the money went (a grant's wallet) or came from
	// (a burn's).
	Account currency.AccountID `json:"account"`
	Key     string             `json:"key"`
	Memo    string             `json:"memo,omitempty"`
}

// Supply is the history of cur's money supply, oldest first, the last
// limit points of it (every point if limit is zero).
func (t *Treasury) Supply(ctx context.Context, cur currency.Code, limit int) ([]SupplyPoint, error) {
	var out []SupplyPoint
	var after int64
	for {
		es, err := t.l.Statement(ctx, currency.IssuanceID(cur), after, currency.MaxPage)
		if err != nil {
			return nil, fmt.Errorf("supply of %s: %w", cur, err)
		}
		for _, e := range es {
			out = append(out, PointOf(e))
			after = e.Seq
		}
		if limit > 0 && len(out) > 2*limit {
			out = append(out[:0], out[len(out)-limit:]...)
		}
		if len(es) < currency.MaxPage {
			break
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

// PointOf is the supply point of e, a line of a currency's issuance
// account's statement: what is minted is what that account gave.
func PointOf(e currency.Entry) SupplyPoint {
	return SupplyPoint{At: e.At, Supply: e.Balance.Neg(), Change: e.Amount.Neg(), Account: e.Counterparty, Key: e.Key, Memo: e.Memo}
}
