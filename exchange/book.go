package exchange

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// The book: an offer that says it will wait (OfferRequest.Wait) and that
// no server accepts at once is kept in the store (Store.Queue), shared by
// every instance and kept across restarts, and answered as queued. When
// GPUs free up (match.go) it is offered again; the first accept makes its
// contract as an offer's does, and the store takes it out of the book in
// the transaction that escrows. It leaves the book otherwise when its
// client cancels it, when its wait ends (the sweep), or when at a match
// its client cannot pay or a cap refuses it, each with a left_book event.
//
// The book is ordered by what each offer is sure to pay per GPU-second
// (Price, contract.Terms.SurePrice), so that no curve or prepayment can
// claim a place it will not pay for.
//
// Money is checked, not held, while an offer waits: the escrow is made at
// the match from the balance then, so a waiting offer holds money at most
// once, and nothing is held that a cancel, an expiry or a restart would
// have to give back. At the queue the wallet must cover the prepayments
// of all the client's waiting offers in the currency (an early no, as
// the offer's own funds check is); the balance reply shows what they will
// need. As an offer's sure price is at most its prepayment over its
// GPU-seconds, a high place needs money behind it; and a full book takes
// an offer that outbids the last of its currency, which leaves (Outbid),
// so offers sure of nothing cannot keep out one that will pay.

// checkWait refuses a wait that is negative or longer than MaxWait, or
// that comes with a counter-offer taken (which is taken now or never).
func (h *House) checkWait(req protocol.OfferRequest) error {
	switch {
	case req.Wait == 0:
		return nil
	case req.Wait < 0 || time.Duration(req.Wait) > protocol.MaxWait:
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "wait",
			Message: fmt.Sprintf("%v; want more than 0 and at most %v", time.Duration(req.Wait), protocol.MaxWait)}
	case req.Counter != "":
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "wait", Message: "a counter-offer is taken now or not at all: leave wait out"}
	}
	return nil
}

// queue puts client's offer id in the book, no server having accepted it
// (reply holds their answers), and answers it queued. available is the
// wallet's balance, which must cover this and the client's other waiting
// offers' prepayments in the currency.
func (h *House) queue(ctx context.Context, id string, t contract.Terms, req protocol.OfferRequest, lock string, available decimal.Decimal, reply protocol.OfferReply) (protocol.OfferReply, error) {
	mine, err := h.store.Book(ctx, BookQuery{Client: t.Client, Currency: t.Currency})
	if err != nil {
		return protocol.OfferReply{}, err
	}
	need := t.Prepayment
	for _, w := range mine {
		if w.ID != id {
			need = need.Add(w.Terms.Prepayment)
		}
	}
	scale, _ := h.cachedScale(t.Currency) // validated: looked up already
	if need.GreaterThan(available) {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EInsufficientFunds, Field: "terms.prepayment",
			Message: fmt.Sprintf("this and your %d waiting offers need %s, more than the available %s %s", len(mine), currency.Format(need, scale), currency.Format(available, scale), t.Currency)}
	}
	now := h.cfg.Now().UTC()
	w := contract.Waiting{ID: id, Client: t.Client, RequestID: req.RequestID, Terms: t, Resumes: req.Resumes,
		Price: Price(t, scale), QueuedAt: now, Until: now.Add(time.Duration(req.Wait))}
	q, err := h.store.Queue(ctx, w, lock, BookLimits{PerClient: h.cfg.BookPerClient, Total: h.cfg.BookTotal})
	if err != nil {
		return protocol.OfferReply{}, err
	}
	if q.Created {
		h.metrics.book.WithLabelValues("queued").Inc()
	}
	if o := q.Outbid; o != nil {
		o.Left = contract.LeftOutbid
		h.metrics.book.WithLabelValues(string(contract.LeftOutbid)).Inc()
		h.notify.Notify(o.Client, Event{Type: protocol.EventLeftBook, Waiting: o, Message: OutbidMessage(q.Waiting), At: now})
	}
	reply.Queued = &q.Waiting
	return reply, nil
}

// Price is the sure price that orders the book (contract.Terms.SurePrice):
// exact to the currency's scale plus protocol.PricePlaces, and at most 18
// places, what the SQL store keeps.
func Price(t contract.Terms, scale int32) decimal.Decimal {
	return t.SurePrice().Decimal(min(scale+protocol.PricePlaces, 18))
}

// Cancel takes one of client's waiting offers out of the book; the reply
// is it, left cancelled. An offer matched meanwhile is not_found here:
// its contract is in the client's contracts.
func (h *House) Cancel(ctx context.Context, client, id string) (contract.Waiting, error) {
	notFound := &bourse.Error{Code: bourse.ENotFound, Field: "offer",
		Message: "no waiting offer " + id + " of yours: it became a contract, left the book, or never waited"}
	w, err := h.store.Waiting(ctx, id)
	switch {
	case bourse.ErrorCode(err) == bourse.ENotFound || (err == nil && w.Client != client):
		return contract.Waiting{}, notFound
	case err != nil:
		return contract.Waiting{}, err
	}
	left, ok, err := h.leave(ctx, w.ID, contract.LeftCancelled, "cancelled by its client")
	switch {
	case err != nil:
		return contract.Waiting{}, err
	case !ok:
		return contract.Waiting{}, notFound
	}
	return left, nil
}

// WaitingOffers lists client's waiting offers (of one currency, if cur is
// set), best price first, each with its place in the book.
func (h *House) WaitingOffers(ctx context.Context, client, cur string) ([]contract.Waiting, error) {
	ws, err := h.store.Book(ctx, BookQuery{Client: client, Currency: cur})
	if err != nil {
		return nil, err
	}
	out := ws[:0]
	for _, w := range ws {
		if got, err := h.store.Waiting(ctx, w.ID); err == nil {
			out = append(out, got) // its Ahead counted
		}
	}
	return out, nil
}

// leave takes waiting offer id out of the book without a contract, for
// why, and tells its client; ok is false if it was not there any more
// (matched, or gone another way first: of those racing, one tells).
func (h *House) leave(ctx context.Context, id string, why contract.Left, message string) (contract.Waiting, bool, error) {
	w, err := h.store.Unqueue(ctx, id)
	switch {
	case bourse.ErrorCode(err) == bourse.ENotFound:
		return contract.Waiting{}, false, nil
	case err != nil:
		return contract.Waiting{}, false, err
	}
	w.Left = why
	h.metrics.book.WithLabelValues(string(why)).Inc()
	h.notify.Notify(w.Client, Event{Type: protocol.EventLeftBook, Waiting: &w, Message: message, At: h.cfg.Now().UTC()})
	return w, true, nil
}

// expireBook takes the waiting offers whose wait has ended out of the
// book, a sweep's batch at a time. Every instance sweeps; each offer
// leaves once (Store.Unqueue).
func (h *House) expireBook(ctx context.Context, now time.Time) {
	due, err := h.store.Book(ctx, BookQuery{DueBy: now, Limit: h.cfg.SweepBatch})
	if err != nil {
		h.log.Warn("sweep: list waiting offers due", "err", err)
		return
	}
	for _, w := range due {
		if _, _, err := h.leave(ctx, w.ID, contract.LeftExpired, "its wait ended unmatched"); err != nil {
			h.log.Warn("sweep: expire a waiting offer", "offer", w.ID, "err", err)
		}
	}
}

// waitingSum is what client's waiting offers in cur will need.
func (h *House) waitingSum(ctx context.Context, client, cur string) (*protocol.WaitingSum, error) {
	ws, err := h.store.Book(ctx, BookQuery{Client: client, Currency: cur})
	if err != nil || len(ws) == 0 {
		return nil, err
	}
	sum := &protocol.WaitingSum{Offers: len(ws), Prepayments: decimal.Zero}
	for _, w := range ws {
		sum.Prepayments = sum.Prepayments.Add(w.Terms.Prepayment)
	}
	return sum, nil
}

// leftFor is why a match's refusal takes an offer out of the book, and
// whether it does: a wallet that cannot pay, or a cap, do; anything
// transient (a database down) does not.
func leftFor(err error) (contract.Left, bool) {
	switch bourse.ErrorCode(err) {
	case bourse.EInsufficientFunds, bourse.ENotFound:
		return contract.LeftUnpaid, true
	case bourse.ECapExceeded:
		return contract.LeftCapped, true
	case bourse.EInvalidOffer, bourse.EInvalidCurve, bourse.EUnknownCurrency, bourse.EInvalid:
		return contract.LeftInvalid, true
	}
	return "", false
}
