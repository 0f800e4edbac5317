package exchange

import (
	"context"
	"errors"
	"time"

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
		case err == nil && st.Preparing:
			h.preparing(context.Background(), c)
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

// prepareBound is how long terms t's job may be prepared before it
// starts: PrepareTimeout for a job with a container image, none for
// others. The escrow of such a job is held that much longer.
func (h *House) prepareBound(t contract.Terms) time.Duration {
	if t.Job != nil && t.Job.Image != "" {
		return h.cfg.PrepareTimeout
	}
	return 0
}

// preparing records that c's server prepares its job before it starts it
// (Started.Preparing): its start deadline moves out by prepareBound, so
// that the sweep does not void it while its image is pulled. The server
// reports the start later, or the job's failure by a final reading.
func (h *House) preparing(ctx context.Context, c contract.Contract) {
	until := h.cfg.Now().Add(h.prepareBound(c.Terms))
	_, err := h.store.Update(ctx, c.ID, func(c *contract.Contract) ([]currency.Op, error) {
		if !c.Prepare(until) {
			return nil, ErrNoChange
		}
		return nil, nil
	})
	if err != nil && !errors.Is(err, ErrNoChange) {
		h.log.Warn("record that a server prepares a job; the sweep may void it at its start deadline", "contract", c.ID, "err", err)
	}
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
