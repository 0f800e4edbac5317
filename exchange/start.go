package exchange

import (
	"context"
	"errors"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// The exchange asks a contract's server to start its job once the escrow
// is made, and does not wait for the answer (the client has its
// contract); its driver asks again while the server does not answer
// (natsvc). A server that answers that it cannot start the job (its
// image not pulled, its GPUs gone) has the contract voided at once, the
// client's prepayment back whole, rather than at the start deadline;
// one that does not answer at all is voided by the sweep at that
// deadline, unless a reading shows the job running.

// start asks c's server to start it (offerID, the negotiation that made
// it).
func (h *House) start(ctx context.Context, offerID string, c contract.Contract) {
	h.router.Start(ctx, protocol.Start{Offer: offerID, Contract: protocol.View(c)}, func(st protocol.Started, err error) {
		switch {
		case err == nil && st.Booked:
			// The server starts it at start_at and says so then.
			h.log.Debug("contract booked", "contract", c.ID, "server", c.Server, "at", st.At)
		case err == nil:
			if _, err := h.Started(context.Background(), c.Server, st); err != nil {
				h.log.Warn("mark started", "contract", st.Contract, "err", err)
			}
		case unanswered(err):
			h.log.Warn("server did not start contract", "contract", c.ID, "server", c.Server, "err", err)
		default:
			h.startRefused(context.Background(), c, err)
		}
	})
}

// unanswered says whether a start's error says nothing of the job (no
// answer in time, nobody listening, the server busy): asking again may
// start it.
func unanswered(err error) bool {
	switch bourse.ErrorCode(err) {
	case bourse.EDeadlineExceeded, bourse.EUnavailable, bourse.EInternal:
		return true
	}
	return false
}

// startRefused voids contract c, still accepted, whose server answered
// that it cannot start its job: the prepayment goes back whole now.
func (h *House) startRefused(ctx context.Context, c contract.Contract, refusal error) {
	h.log.Warn("server refused to start contract; voided", "contract", c.ID, "server", c.Server, "err", refusal)
	got, err := h.store.Update(ctx, c.ID, func(c *contract.Contract) ([]currency.Op, error) {
		if c.State != contract.StateAccepted {
			return nil, ErrNoChange // it started after all (a reading came), or ended
		}
		return h.void(c, contract.ReasonNotStarted), nil
	})
	switch {
	case errors.Is(err, ErrNoChange):
	case err != nil:
		h.log.Warn("void a contract its server refused to start; the sweep voids it at its start deadline", "contract", c.ID, "err", err)
	default:
		h.metrics.voided.Inc()
		h.event(protocol.EventVoided, got)
	}
}
