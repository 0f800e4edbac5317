package exchange

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// One outcome per request: an offer's request id names its contract, and
// a client that hears nothing retries with the same id, perhaps to
// another instance, perhaps while the first try still negotiates (an
// instance paused mid-negotiation wakes with both tries queued). Two tries
// negotiating at once could answer differently: the first wins GPUs and
// escrows, the second, finding no contract yet and no GPUs, answers "no
// contract", and the client is charged for a contract it was told it did
// not get. So a try locks its request id in the store before it
// negotiates, until a deadline; a try that finds the id locked waits for
// that negotiation's outcome and answers it, or answers unavailable,
// never another "no". The escrow (Store.Open) checks, in its transaction,
// that the lock is still its negotiation's, so a negotiation whose lock
// was taken over after its deadline (its instance was paused past it)
// makes no contract. A negotiation that ends without a contract records
// its answer and frees the id: a later retry negotiates afresh, as
// docs/protocol.md says.

// Lock is a negotiation's hold on a request's contract id.
type Lock struct {
	ID    string    // the contract id the request names
	Token string    // the negotiation's own, unique
	Until time.Time // after which another try may take the lock over
}

// Locked is what Store.Lock found.
type Locked struct {
	// Mine: the lock is the caller's now.
	Mine bool
	// Holder and Until are the negotiation under way, where it is not
	// the caller's ("" if none).
	Holder string
	Until  time.Time
	// Ended is the token of the last negotiation of the id that ended
	// without a contract, and Outcome what it answered (Store.Finish).
	Ended   string
	Outcome []byte
}

// lockMargin is how long a lock outlasts its negotiation's time limit:
// the escrow after the accept, and a slow database.
const lockMargin = 5 * time.Second

// awaitEvery is how often a try waiting on another reads the lock.
const awaitEvery = 20 * time.Millisecond

// outcome is a negotiation's answer as Store.Finish keeps it.
type outcome struct {
	Reply *protocol.OfferReply `json:"reply,omitempty"`
	Err   *bourse.Error        `json:"error,omitempty"`
}

// encodeOutcome returns the encoding of an offer's answer, for
// Store.Finish to call if a try waited on it.
func encodeOutcome(reply protocol.OfferReply, err error) func() []byte {
	return func() []byte { return outcomeBytes(reply, err) }
}

func outcomeBytes(reply protocol.OfferReply, err error) []byte {
	o := outcome{Reply: &reply}
	if err != nil {
		o = outcome{Err: asBourseError(err)}
	}
	// protocol.Marshal writes what encoding/json would, without its
	// compacting pass over the terms' own JSON.
	b, _ := protocol.Marshal(o)
	return b
}

func decodeOutcome(b []byte) (protocol.OfferReply, error) {
	var o outcome
	if err := json.Unmarshal(b, &o); err != nil || (o.Reply == nil && o.Err == nil) {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EUnavailable, Field: "request_id",
			Message: "another try of this request answered, but its answer is unreadable here; retry with a new request id"}
	}
	if o.Err != nil {
		return protocol.OfferReply{}, o.Err
	}
	return *o.Reply, nil
}

// asBourseError is err as it crosses the wire.
func asBourseError(err error) *bourse.Error {
	var be *bourse.Error
	if errors.As(err, &be) {
		return be
	}
	return &bourse.Error{Code: bourse.EInternal, Message: err.Error()}
}

// locking negotiates client's offer under contract id once it holds the
// id's lock, or waits for the negotiation that holds it (await).
func (h *House) locking(ctx context.Context, client, id string, t contract.Terms, req protocol.OfferRequest) (protocol.OfferReply, error) {
	now := h.cfg.Now()
	cl := Lock{ID: id, Token: newToken(), Until: now.Add(h.cfg.Negotiation + lockMargin)}
	// The client's funds are read with the lock, in its round trip,
	// where the owners of its caps are known (every offer but a client's
	// first in a currency): before, the lock and the funds were the two
	// round trips an offer made before it negotiated.
	var pre *funds
	var got Locked
	var err error
	if owners, ok := h.knownOwners(client, currency.Code(t.Currency)); ok {
		pre = &funds{owners: owners}
		got, pre.bals, err = h.store.LockFunds(ctx, cl, now, fundsOf(client, currency.Code(t.Currency), owners)...)
	} else {
		got, err = h.store.Lock(ctx, cl, now)
	}
	if err != nil {
		return protocol.OfferReply{}, err
	}
	if !got.Mine {
		return h.await(ctx, client, id, t, req, cl, got.Holder)
	}
	if reply, ok, err := recorded(got); ok {
		// A try of a request that another try answered already: a
		// retry whose answer was lost, or a stale copy of an earlier
		// try (delivered late to an instance that was paused, say)
		// that its client gave up on and then heard the answer of.
		// Either way the answer stands; negotiating now could make a
		// contract its client was told it did not get.
		_ = h.store.Finish(context.WithoutCancel(ctx), cl, func() []byte { return got.Outcome })
		return h.asNow(ctx, id, reply, err)
	}
	return h.holding(ctx, client, id, t, req, cl, pre)
}

// recorded is the answer recorded for the request that got locked, where
// it says the request made no contract: counter-offers, rejections, or
// an error other than those that ask the client to retry (unavailable,
// internal, deadline_exceeded), which a new try negotiates again, as it
// does an offer queued in the book.
func recorded(got Locked) (protocol.OfferReply, bool, error) {
	if got.Ended == "" || len(got.Outcome) == 0 {
		return protocol.OfferReply{}, false, nil
	}
	reply, err := decodeOutcome(got.Outcome)
	switch bourse.ErrorCode(err) {
	case bourse.EUnavailable, bourse.EInternal, bourse.EDeadlineExceeded:
		return protocol.OfferReply{}, false, nil
	}
	if reply.Queued != nil {
		// A waiting offer may still become a contract, and a try of it
		// answers where it stands now.
		return protocol.OfferReply{}, false, nil
	}
	return reply, true, err
}

// asNow is a recorded answer as it stands now. An answer that names the
// request's contract was recorded by a try that found that contract made
// by an earlier one (holding): the contract as it was then, accepted or
// running, perhaps since settled. A client told that copy would hear its
// job still runs and has cost nothing while its wallet has paid
// (issue 31), so the contract is read again: the answer is which
// contract, the contract is as stored now (docs/protocol.md,
// "Idempotency").
func (h *House) asNow(ctx context.Context, id string, reply protocol.OfferReply, err error) (protocol.OfferReply, error) {
	if err != nil || reply.Contract == nil {
		return reply, err
	}
	c, err := h.store.Contract(ctx, id)
	if err != nil {
		return protocol.OfferReply{}, err
	}
	return made(c), nil
}

// holding negotiates while cl holds the lock, and records the outcome
// of a negotiation that made no contract, freeing the id.
func (h *House) holding(ctx context.Context, client, id string, t contract.Terms, req protocol.OfferRequest, cl Lock, pre *funds) (protocol.OfferReply, error) {
	reply, err := h.fresh(ctx, client, id, t, req, cl.Token, pre)
	if err == nil && reply.Contract != nil {
		return reply, nil // Open ended the lock
	}
	// A retried request whose first try made a contract answers with
	// that contract. It is looked up only here, where this try made
	// none: a retry is rare, and one that gets as far as the escrow
	// finds the first contract there (Store.Open), so an offer that
	// makes a contract never pays for the lookup.
	if c, lerr := h.store.Contract(ctx, id); lerr == nil {
		reply, err = made(c), nil
	}
	if ferr := h.store.Finish(context.WithoutCancel(ctx), cl, encodeOutcome(reply, err)); ferr != nil {
		h.log.Warn("offer: the lock of a request not freed; it frees at its deadline", "contract", id, "err", ferr)
	}
	return reply, err
}

// await waits for the negotiation awaited, which holds id's lock, and
// answers its outcome: its contract, or the answer it recorded. A lock
// whose time passes (its instance stopped or was paused) is taken over,
// and this try negotiates; the other can then make no contract.
func (h *House) await(ctx context.Context, client, id string, t contract.Terms, req protocol.OfferRequest, cl Lock, awaited string) (protocol.OfferReply, error) {
	giveUp := h.cfg.Now().Add(2 * (h.cfg.Negotiation + lockMargin))
	for h.cfg.Now().Before(giveUp) {
		if err := h.cfg.Sleep(ctx, awaitEvery); err != nil {
			return protocol.OfferReply{}, err
		}
		now := h.cfg.Now()
		cl.Until = now.Add(h.cfg.Negotiation + lockMargin)
		got, err := h.store.Lock(ctx, cl, now)
		if err != nil {
			return protocol.OfferReply{}, err
		}
		if !got.Mine {
			awaited = got.Holder // still under way, or taken over by a third try
			continue
		}
		if c, lerr := h.store.Contract(ctx, id); lerr == nil {
			_ = h.store.Finish(context.WithoutCancel(ctx), cl, func() []byte { return nil })
			return made(c), nil
		}
		if got.Ended == awaited && len(got.Outcome) > 0 {
			_ = h.store.Finish(context.WithoutCancel(ctx), cl, func() []byte { return got.Outcome })
			reply, err := decodeOutcome(got.Outcome)
			return h.asNow(ctx, id, reply, err)
		}
		if reply, ok, err := recorded(got); ok {
			// A newer try ended between two looks: its answer stands.
			_ = h.store.Finish(context.WithoutCancel(ctx), cl, func() []byte { return got.Outcome })
			return h.asNow(ctx, id, reply, err)
		}
		// The id is this try's now and no other can make its contract:
		// negotiating is safe.
		return h.holding(ctx, client, id, t, req, cl, nil) // the funds read again: time has passed
	}
	return protocol.OfferReply{}, &bourse.Error{Code: bourse.EUnavailable, Field: "request_id",
		Message: "other tries of this request keep negotiating it; retry with the same request id for its answer"}
}

// newToken is a negotiation's lock token: random, so that no two
// instances make the same.
func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
