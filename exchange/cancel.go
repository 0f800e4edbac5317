package exchange

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// Cancel is an administrator's stop of contract id at now (bourse admin
// cancel, scancel's), made through the store alone, with no exchange
// instance asked: an accepted contract is voided at once and its
// prepayment released; a running one is stopped as its client's kill
// stops it (contract.AskStop, reason killed, the stop grace from now),
// so that the next sweep of any instance settles it on its last reading
// once the grace has passed and tells its server to stop the job (the
// sweep's ended). A contract that has ended, or whose stop is asked
// already, is returned as it is. Why it was cancelled is the audit
// trail's (treasury.CancelContract).
func Cancel(ctx context.Context, store Store, id string, now time.Time, grace time.Duration) (contract.Contract, error) {
	c, err := store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
		switch {
		case c.State == contract.StateAccepted:
			return voidAt(c, contract.ReasonKilled, now), nil
		case c.AskStop(contract.ReasonKilled, now, grace):
			return nil, nil
		}
		return nil, ErrNoChange
	})
	if err != nil && !errors.Is(err, ErrNoChange) {
		return contract.Contract{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	return c, nil
}
