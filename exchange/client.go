package exchange

import (
	"context"
	"errors"
	"fmt"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Contract is one of client's contracts. Another client's contract is
// "not found", so that ids reveal nothing.
func (h *House) Contract(ctx context.Context, client, id string) (contract.Contract, error) {
	c, err := h.store.Contract(ctx, id)
	if err != nil || c.Client != client {
		if err == nil || bourse.ErrorCode(err) == bourse.ENotFound {
			return contract.Contract{}, &bourse.Error{Code: bourse.ENotFound, Field: "contract", Message: "no contract " + id}
		}
		return contract.Contract{}, err
	}
	return c, nil
}

// Contracts lists client's contracts, newest first: limit of them, 100 if
// limit is outside 1..1000.
func (h *House) Contracts(ctx context.Context, client string, limit int) ([]contract.Contract, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return h.store.Contracts(ctx, client, limit)
}

// Control suspends or kills one of client's contracts (action is
// contract.ReasonSuspended or contract.ReasonKilled). An accepted contract that
// has not started is voided here; a running one is stopped by its server,
// whose final reading settles it. The exchange records the stop first
// (contract.Stop): a server that ignores it, or never hears it, gains
// nothing past StopGrace, when the sweep settles the contract on its last
// reading. Either way the answer is the contract as it stands; the
// settlement follows as an event. A server that does not confirm makes it
// EUnavailable.
func (h *House) Control(ctx context.Context, client, id string, action contract.Reason) (contract.Contract, error) {
	c, err := h.Contract(ctx, client, id)
	if err != nil {
		return contract.Contract{}, err
	}
	if c.Ended() {
		return c, nil
	}
	if c.State == contract.StateAccepted {
		voided, err := h.store.Update(ctx, c.ID, func(c *contract.Contract) ([]currency.Op, error) {
			if c.State != contract.StateAccepted {
				return nil, ErrNoChange
			}
			return h.void(c, action), nil
		})
		if err == nil {
			h.metrics.voided.Inc()
			h.event(protocol.EventVoided, voided)
			h.router.Control(ctx, voided, action, nil) // in case it started meanwhile
			return voided, nil
		}
		if !errors.Is(err, ErrNoChange) {
			return contract.Contract{}, err
		}
		c = voided // it started meanwhile: stop it below
	}
	if c, err = h.stopping(ctx, c.ID, action); err != nil {
		return contract.Contract{}, err
	}
	if !c.HoldsEscrow() {
		return c, nil // it ended meanwhile
	}
	confirmed := make(chan error, 1)
	h.router.Control(ctx, c, action, func(err error) { confirmed <- err })
	select {
	case err = <-confirmed:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return contract.Contract{}, &bourse.Error{Code: bourse.EUnavailable, Field: "contract",
			Message: fmt.Sprintf("server %s did not confirm; the contract settles on its last reading if the server stays silent", c.Server)}
	}
	return c, nil
}

// stopping records action, a client's stop of running contract id, and
// returns the contract as it stands.
func (h *House) stopping(ctx context.Context, id string, action contract.Reason) (contract.Contract, error) {
	now := h.cfg.Now().UTC()
	c, err := h.store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
		return nil, h.stopAsked(c, action, now)
	})
	if err != nil && !errors.Is(err, ErrNoChange) {
		return contract.Contract{}, err
	}
	return c, nil
}

// Balance is client's wallet in a currency, with the currency's scale.
func (h *House) Balance(ctx context.Context, client, cur string) (protocol.BalanceReply, error) {
	var b protocol.BalanceReply
	var err error
	b.Balance, err = h.store.Ledger().Balance(ctx, currency.WalletID(currency.Code(cur), client))
	if err != nil {
		return protocol.BalanceReply{}, err
	}
	// The wallet exists, so its currency does.
	scale, ok := h.scaleOf(ctx)(string(b.Currency))
	if !ok {
		return protocol.BalanceReply{}, bourse.Errorf(bourse.EUnavailable, "exchange.Balance", "currency %s: cannot read its scale", b.Currency)
	}
	b.Scale = scale
	if b.Waiting, err = h.waitingSum(ctx, client, cur); err != nil {
		return protocol.BalanceReply{}, err
	}
	return b, nil
}

// Statement pages through client's wallet statement in a currency: limit
// entries after the entry numbered after, 100 if limit is outside 1..1000.
func (h *House) Statement(ctx context.Context, client, cur string, after int64, limit int) ([]currency.Entry, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return h.store.Ledger().Statement(ctx, currency.WalletID(currency.Code(cur), client), after, limit)
}
