package caps

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Release is what gives back the caps an ended contract holds, to commit
// with its settlement or void: its GPUs to each GPU cap (a void of each
// hold), and of its prepayment's reserve on each spend budget charge
// captured to the spent account and the rest back to the budget it came
// from, the period it was admitted in (a void passes zero). Each acts
// only where its hold is still open (IfOpen), which the ledger decides in
// its transaction: a contract stuck past its escrow's deadline and the
// caps' grace has had these holds expired by the sweep already (as
// holds no contract owns), and its settlement must not then fail on them.
// So the change that settles a contract reads nothing: Release is pure.
//
// The keys are those every version wrote: cap-release/<contract> for the
// client's own GPU cap, cap-release/<contract>/<owner> for a project's or
// organisation's, spend-settle/<contract>/<i> for the i-th budget.
func Release(c *contract.Contract, charge decimal.Decimal) []currency.Op {
	ops := make([]currency.Op, 0, len(c.CapHolds)+len(c.SpendHolds))
	own := "gpus/" + c.ID
	for _, hold := range c.CapHolds {
		key := "cap-release/" + c.ID
		if hold != own {
			key += "/" + strings.TrimPrefix(hold, own+"/")
		}
		ops = append(ops, currency.Void{Key: key, Hold: currency.HoldID(hold), Memo: "contract " + c.ID + " ended", IfOpen: true})
	}
	spent := SpentID(currency.Code(c.Terms.Currency))
	for i, hold := range c.SpendHolds {
		ops = append(ops, currency.Capture{Key: fmt.Sprintf("spend-settle/%s/%d", c.ID, i), Hold: currency.HoldID(hold),
			To: spent, Amount: charge, Memo: "contract " + c.ID + " ended", IfOpen: true})
	}
	return ops
}
