package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Reading takes a reading as it travels: published by server on the
// usage subject of contract id, under message id msgID (empty if it had
// none), with body data. It refuses for good, counting why, what no retry
// could make acceptable: a message id that names another server (an
// attempt to spend that server's ids and have its readings dropped as
// duplicates), a reading without the server's signature where
// Config.Verifier requires one, a malformed reading, one for another
// contract than its subject's; the rest is Count's. A signed reading
// counted is kept on the contract as its server sent it (Contract.Signed).
func (h *House) Reading(ctx context.Context, server, id, msgID string, data []byte, sig string) error {
	r, err := protocol.DecodeReading(data)
	_, err = h.reading(ctx, server, id, msgID, data, sig, r, err)
	return err
}

// ReadingOf is Reading of a reading its driver has decoded already: r is
// protocol.DecodeReading(data), which succeeded. Decoding it again cost
// every reading a second decode (natsvc decodes a readings message's
// readings to learn their contracts, and a final one's to tell its server).
func (h *House) ReadingOf(ctx context.Context, server, id, msgID string, r contract.Reading, data []byte, sig string) error {
	_, err := h.reading(ctx, server, id, msgID, data, sig, r, nil)
	return err
}

// reading is Reading with data decoded: r, or err where it is not a
// reading. Where it changes nothing (ErrNoChange) it returns the
// contract as stored, for a receipt.
func (h *House) reading(ctx context.Context, server, id, msgID string, data []byte, sig string, r contract.Reading, err error) (contract.Contract, error) {
	if msgID != "" && !strings.HasPrefix(msgID, server+":") {
		h.metrics.readings.WithLabelValues("foreign_id").Inc()
		h.log.Warn("reading under another server's message id dropped", "server", server, "contract", id, "msg_id", msgID)
		return contract.Contract{}, &bourse.Error{Code: bourse.EPermission, Field: "msg_id", Message: "message id " + msgID + " names another server than " + server}
	}
	var signed *contract.Signed
	if v := h.cfg.Verifier; v != nil {
		if err := v.Verify(server, data, sig); err != nil {
			h.metrics.readings.WithLabelValues("bad_signature").Inc()
			h.log.Warn("reading without its server's signature dropped", "server", server, "contract", id, "err", err)
			return contract.Contract{}, &bourse.Error{Code: bourse.EPermission, Field: "sig", Message: "reading of " + id + ": " + err.Error()}
		}
		signed = &contract.Signed{Body: data, Sig: sig}
	}
	if err == nil && r.Contract != id {
		err = &bourse.Error{Code: bourse.EInvalid, Field: "contract", Message: "a reading of " + r.Contract + " on the subject of " + id}
	}
	if err != nil {
		h.metrics.readings.WithLabelValues("rejected").Inc()
		h.log.Warn("malformed reading dropped", "server", server, "contract", id, "err", err)
		return contract.Contract{}, err
	}
	c, err := h.count(ctx, server, r, signed)
	return c, h.counted(err, server, r)
}

// Count takes a reading that server published: it stores r as the
// contract's latest reading if it is newer and believable, and settles the
// contract if r is final. ErrNoChange says r changed nothing (stale, or
// for a contract that ended); a transient error (Transient) says to
// deliver r again later; any other error refuses r for good.
func (h *House) Count(ctx context.Context, server string, r contract.Reading) error {
	_, err := h.count(ctx, server, r, nil)
	return h.counted(err, server, r)
}

// counted counts and logs what became of a reading.
func (h *House) counted(err error, server string, r contract.Reading) error {
	switch {
	case err == nil:
		h.metrics.readings.WithLabelValues("counted").Inc()
	case errors.Is(err, ErrNoChange):
		h.metrics.readings.WithLabelValues("stale").Inc()
	case Transient(err):
		h.log.Warn("reading not stored", "contract", r.Contract, "seq", r.Seq, "err", err)
	default:
		h.metrics.readings.WithLabelValues("rejected").Inc()
		h.log.Warn("reading rejected", "contract", r.Contract, "server", server, "seq", r.Seq, "err", err)
	}
	return err
}

// count stores r; where that changes nothing (ErrNoChange) it returns
// the contract as stored.
func (h *House) count(ctx context.Context, server string, r contract.Reading, signed *contract.Signed) (contract.Contract, error) {
	now := h.cfg.Now().UTC()
	var final bool
	store := func(c *contract.Contract) error {
		if c.Server != server {
			return &bourse.Error{Code: bourse.EPermission, Message: "reading from " + server + " for a contract of " + c.Server}
		}
		if !c.HoldsEscrow() || (c.Reading != nil && r.Seq <= c.Reading.Seq) {
			return ErrNoChange
		}
		if err := h.believable(c, r, now); err != nil {
			return err
		}
		c.Record(r, now)
		c.Signed = signed
		return nil
	}
	c, err := h.updatePriced(ctx, r.Contract, func(c *contract.Contract, scale int32) ([]currency.Op, error) {
		final = false // the change may run more than once: its last run counts
		if err := store(c); err != nil || !r.Final {
			return nil, err
		}
		final = true
		return h.settle(c, finalReason(r), scale)
	})
	if err != nil && final && !Transient(err) {
		// The ledger refused the settlement. Keep the final reading all the
		// same: the sweep settles on it once the server falls silent,
		// with backoff while it fails, and by the fixed rule in the end.
		h.log.Error("a final reading does not settle; kept for the sweep", "contract", r.Contract, "err", err)
		final = false
		c, err = h.store.Update(ctx, r.Contract, func(c *contract.Contract) ([]currency.Op, error) { return nil, store(c) })
	}
	switch {
	case errors.Is(err, ErrNoChange):
		return c, err
	case err != nil:
		return contract.Contract{}, err
	}
	if final {
		h.metrics.settled.WithLabelValues(string(c.Reason)).Inc()
		h.event(protocol.EventSettled, c)
		return c, nil
	}
	ev := Event{Type: protocol.EventReading, Contract: c, At: now}
	if scale, ok := h.scaleOf(ctx)(c.Terms.Currency); ok {
		ev.Due, _ = contract.Due(c.Terms, r.Usage(), scale)
	}
	h.notify.Notify(c.Client, ev)
	return c, nil
}

// finalReason is why a final reading says its contract stopped.
func finalReason(r contract.Reading) contract.Reason {
	if r.Reason == "" {
		return contract.ReasonCompleted
	}
	return r.Reason
}

// believable judges a reading by the exchange's own clock, which is all
// it trusts (docs/protocol.md, "What the exchange believes"). A job
// cannot start before its contract was accepted, nor a booking before its
// start_at, so a reading's T cannot exceed the time since then, nor its
// "at" lie ahead of now, each but by ClockSkew. A contract its client
// stopped is believed only up to its stop's By (contract.Stop), not now:
// a server that ignores a kill gains nothing by the time that passes. A
// reading's "at" may lie far in the past: readings wait in outboxes and
// streams through outages. U needs no bound of its own: pricing clamps
// it to gpus·T (and S to gpus), T being bounded here.
func (h *House) believable(c *contract.Contract, r contract.Reading, now time.Time) error {
	skew := h.cfg.ClockSkew
	earliest := later(c.AcceptedAt, c.Terms.StartAt.UTC())
	until, what := now, "the exchange's clock"
	if st := c.Stop; st != nil && st.By.Before(now) {
		until, what = st.By, fmt.Sprintf("the end of the grace after its client's %s stop", st.Reason)
	}
	switch {
	case r.At.After(until.Add(skew)):
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is ahead of %s (%s) by more than %v", r.At.UTC().Format(time.RFC3339Nano), what, until.Format(time.RFC3339Nano), skew)}
	case r.At.Before(earliest.Add(-skew)):
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is before the contract could start (%s)", r.At.UTC().Format(time.RFC3339Nano), earliest.Format(time.RFC3339Nano))}
	case time.Duration(r.T) > until.Sub(earliest)+skew:
		return &bourse.Error{Code: bourse.EInvalid, Field: "t", Message: fmt.Sprintf(
			"%v of wall time, but by %s the contract can have run %v at most", time.Duration(r.T), what, until.Sub(earliest).Round(time.Millisecond))}
	}
	return nil
}

// errNoScale stops an update whose currency's scale is not cached yet.
var errNoScale = errors.New("currency scale not cached")

// updatePriced is store.Update for changes that price the contract. The
// currency's scale is looked up outside the store's transaction: a lookup
// inside would hold one database connection while waiting for another,
// and with every connection so held, wait for ever.
func (h *House) updatePriced(ctx context.Context, id string, change func(c *contract.Contract, scale int32) ([]currency.Op, error)) (contract.Contract, error) {
	for attempt := 0; ; attempt++ {
		var missing string
		c, err := h.store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
			scale, ok := h.cachedScale(c.Terms.Currency)
			if !ok {
				missing = c.Terms.Currency
				return nil, errNoScale
			}
			return change(c, scale)
		})
		if !errors.Is(err, errNoScale) || attempt > 0 {
			return c, err
		}
		if _, ok := h.scaleOf(ctx)(missing); !ok {
			return c, fmt.Errorf("contract %s: currency %s unknown", id, missing)
		}
	}
}

// event tells the client about its contract.
func (h *House) event(typ protocol.EventType, c contract.Contract) {
	if typ == protocol.EventSettled || typ == protocol.EventVoided {
		h.room.mark(c.Server) // its GPUs free up: offer them the book
	}
	if typ == protocol.EventSettled && c.Reading != nil && c.Reading.Final {
		// Its server said the job stopped: its GPUs are room again now,
		// not at the server's next heartbeat. Taken away at each contract
		// and given back only by heartbeats, room ran out at a high rate
		// of short jobs while GPUs stood free (issue 42: BenchmarkOffers
		// at 16 clients refused offers with 64 GPUs idle).
		h.servers.freed(c.Server, c.Terms, h.cfg.Now())
	}
	h.notify.Notify(c.Client, Event{Type: typ, Contract: c, At: h.cfg.Now().UTC()})
}

// Transient reports whether err may pass if the same thing is tried again
// (the database was unavailable, say), as opposed to a refusal. ErrNoChange
// is not: trying again changes nothing again. (It carries no code, so it
// would read as internal: a readings message holding a stale reading was
// asked for again every second, for ever.)
func Transient(err error) bool {
	if errors.Is(err, ErrNoChange) {
		return false
	}
	code := bourse.ErrorCode(err)
	return code == bourse.EInternal || code == bourse.EUnavailable
}
