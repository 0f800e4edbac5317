package exchange

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Offer turns client's offer into a contract: validate, check funds,
// route to matching servers, take the first accept, escrow and record,
// then ask the server to start the job (the answer does not wait for the
// start, which a started event reports). Without an accept the reply
// gathers the servers' counter-offers and rejections. A retried request
// (the same request id) answers with the first answer's contract.
func (h *House) Offer(ctx context.Context, client string, req protocol.OfferRequest) (protocol.OfferReply, error) {
	began := h.cfg.Now()
	reply, err := h.offer(ctx, client, req)
	h.metrics.negotiation.Observe(h.cfg.Now().Sub(began).Seconds())
	switch {
	case err != nil:
		h.metrics.offers.WithLabelValues("error").Inc()
		if bourse.ErrorCode(err) == bourse.EInternal {
			h.log.Error("offer failed", "client", client, "err", err)
		}
	case reply.Contract != nil:
		h.metrics.offers.WithLabelValues("contract").Inc()
	case reply.Queued != nil:
		h.metrics.offers.WithLabelValues("queued").Inc()
	case len(reply.Counters) > 0:
		h.metrics.offers.WithLabelValues("countered").Inc()
	default:
		h.metrics.offers.WithLabelValues("rejected").Inc()
	}
	return reply, err
}

func (h *House) offer(ctx context.Context, client string, req protocol.OfferRequest) (protocol.OfferReply, error) {
	if err := checkRequestID(req.RequestID); err != nil {
		return protocol.OfferReply{}, err
	}
	t, err := ownTerms(req.Terms, client, "offer")
	if err != nil {
		return protocol.OfferReply{}, err
	}
	return h.locking(ctx, client, contractID(client, req.RequestID), t, req)
}

// fresh negotiates and escrows an offer of client's as contract id.
// pre is the client's funds where they were read with the lock (nil if
// not).
func (h *House) fresh(ctx context.Context, client, id string, t contract.Terms, req protocol.OfferRequest, lock string, pre *funds) (protocol.OfferReply, error) {
	if err := h.checkTerms(ctx, t); err != nil {
		return protocol.OfferReply{}, err
	}
	if req.Counter != "" && t.Server == "" {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.server", Message: "taking a counter-offer needs the server that made it"}
	}
	if err := h.checkResume(ctx, client, req.Resumes); err != nil {
		return protocol.OfferReply{}, err
	}
	if err := h.checkFiles(ctx, client, t); err != nil {
		return protocol.OfferReply{}, err
	}
	if err := h.checkWait(req); err != nil {
		return protocol.OfferReply{}, err
	}
	adm, available, err := h.admit(ctx, client, t, pre)
	if err != nil {
		return protocol.OfferReply{}, err
	}
	rt := h.servers.routing(t, id, h.cfg.RouteTo, req.Counter)
	if rt.refusal != nil && !rt.mayWait {
		return protocol.OfferReply{}, rt.refusal
	}
	if len(rt.ask) == 0 {
		h.metrics.asked.Observe(0)
		reply := h.fromAsks(ctx, id, t, rt)
		switch {
		case req.Wait > 0:
			return h.queue(ctx, id, t, req, lock, available, reply)
		case rt.refusal != nil:
			return protocol.OfferReply{}, rt.refusal
		}
		return reply, nil
	}
	offerID := h.offerID()
	h.metrics.asked.Observe(float64(len(rt.ask)))
	began := h.cfg.Now()
	win, signed, reply := h.negotiate(ctx, protocol.ServerOffer{Offer: offerID, Terms: t, Counter: req.Counter}, rt.ask)
	if win == "" {
		if req.Counter != "" && len(reply.Rejections) == 1 && reply.Rejections[0].Code == bourse.ECapacityGone {
			return protocol.OfferReply{}, counterGone()
		}
		// Beside the answers of the servers asked, the counter-offers of
		// the asks with room that the offer did not meet.
		r := h.fromAsks(ctx, id, t, rt)
		reply.Counters = append(reply.Counters, r.Counters...)
		reply.Rejections = append(reply.Rejections, r.Rejections...)
		if req.Wait > 0 {
			return h.queue(ctx, id, t, req, lock, available, reply)
		}
		return reply, nil
	}
	// The room is taken before the escrow, so that offers routed
	// meanwhile do not all go where it has just gone; the server's own
	// word after began stands over it (took).
	h.servers.took(win, t, began)
	c, created, err := h.open(ctx, id, lock, offerID, win, signed, adm, t, req, time.Time{})
	if err != nil || !created {
		// No contract of this accept's: its GPUs are the server's again.
		h.servers.untook(win, t, began)
	}
	if err != nil {
		h.router.Cancel(win, offerID)
		return protocol.OfferReply{}, err
	}
	return made(c), nil
}

// open escrows and records the contract that win accepted, then starts it.
// A contract made from the book has queuedAt, when its offer was queued:
// the store makes it only if the offer still waits there.
func (h *House) open(ctx context.Context, id, lock, offerID, win string, signed *contract.Signed, adm caps.Admission, t contract.Terms, req protocol.OfferRequest, queuedAt time.Time) (contract.Contract, bool, error) {
	now := h.cfg.Now().UTC()
	t.Server = win
	// A booking starts at its start_at; the deadline to start counts from
	// then, and the hold's deadline with it. A job's files are fetched
	// before it starts: the time that takes is added.
	c := contract.Contract{
		ID: id, Client: t.Client, Server: win, Terms: t, State: contract.StateAccepted,
		Resumes: req.Resumes, QueuedAt: queuedAt, AcceptedAt: now, StartDeadline: later(now, t.StartAt.UTC()).Add(h.cfg.StartTimeout + h.filesTime(t)),
		AcceptSigned: signed,
	}
	// The key is the negotiation's, not the request's: an escrow that
	// failed (insufficient funds) may be retried with the same request id
	// after a top-up. The hold id is the contract id, so a second escrow of
	// one contract is impossible all the same.
	// The hold's deadline is StuckLimit past the latest a legitimate
	// contract ends (started by its deadline, run for its time limit,
	// heard of within ServerLostAfter): the sweep ends a contract whose
	// hold is due by the fixed rule (sweep.go, expireDue).
	reserve := currency.Reserve{
		Key: "escrow/" + offerID, Hold: currency.HoldID(id), From: currency.WalletID(currency.Code(t.Currency), t.Client),
		Amount: t.Prepayment, Deadline: c.StartDeadline.Add(h.prepareBound(t) + t.TimeLimit + h.cfg.ServerLostAfter + h.cfg.StuckLimit),
		Memo: "prepayment of contract " + id,
	}
	reserves := append([]currency.Reserve{reserve}, adm.Reserves(&c, offerID, reserve.Deadline)...)
	stored, created, err := h.store.Open(ctx, c, lock, reserves...)
	if err != nil {
		if bourse.ErrorCode(err) == bourse.EInsufficientFunds {
			return contract.Contract{}, false, adm.Refusal(ctx, h.store.Ledger(), err)
		}
		return contract.Contract{}, false, err
	}
	if !created {
		// A retry of this request won meanwhile: keep its contract and
		// release this negotiation's accept.
		h.router.Cancel(win, offerID)
		return stored, false, nil
	}
	h.metrics.escrowed.Inc()
	h.event(protocol.EventAccepted, stored)
	for _, w := range adm.Warnings(ctx, h.store.Ledger()) {
		h.notify.Notify(stored.Client, Event{Type: protocol.EventSpendWarning, Contract: stored, At: h.cfg.Now().UTC(), Warning: w})
	}
	// The negotiation ends with the escrow: the client has its contract now,
	// and the start follows, reported by a started event. Waiting for it
	// would add a round trip to the server to every offer's latency. If the
	// server does not answer, it is asked again (start.go) until a reading
	// shows the contract running, or the sweep voids it at its start
	// deadline.
	h.start(ctx, offerID, stored)
	return stored, true, nil
}

// Started records that server started the job of contract st.Contract, as
// it answered a start or reported later (a booking). Another server's
// contract is "not found", so that ids reveal nothing.
func (h *House) Started(ctx context.Context, server string, st protocol.Started) (contract.Contract, error) {
	notFound := &bourse.Error{Code: bourse.ENotFound, Field: "contract", Message: "no contract " + st.Contract + " on this server"}
	c, err := h.store.Update(ctx, st.Contract, func(c *contract.Contract) ([]currency.Op, error) {
		if c.Server != server {
			return nil, notFound
		}
		if st.Booked || st.Preparing {
			return nil, ErrNoChange // a booking confirmed, or a job being prepared: the start follows
		}
		return nil, h.started(c, st)
	})
	switch {
	case err == nil:
		h.event(protocol.EventStarted, c)
		return c, nil
	case errors.Is(err, ErrNoChange):
		return c, nil
	case bourse.ErrorCode(err) == bourse.ENotFound:
		return contract.Contract{}, notFound
	}
	return contract.Contract{}, err
}

// negotiate offers to the candidates, as the router asks them (cheapest
// first, the next once one refuses: natsvc's router.Ask). The first
// accept wins (the router cancels any accept that comes after); with
// none, the reply gathers every counter-offer and rejection that came in
// time.
func (h *House) negotiate(ctx context.Context, offer protocol.ServerOffer, servers []string) (string, *contract.Signed, protocol.OfferReply) {
	var reply protocol.OfferReply
	for a := range h.router.Ask(ctx, offer, servers) {
		switch {
		case a.Err != nil:
			reply.Rejections = append(reply.Rejections, protocol.Rejection{Server: a.Server, Reason: "no answer: " + a.Err.Error(), Code: bourse.EDeadlineExceeded})
		case a.Decision.Accept && h.cfg.Verifier != nil:
			if err := h.verifyAccept(a); err != nil {
				h.metrics.offers.WithLabelValues("accept_unsigned").Inc()
				h.log.Warn("accept without its server's signature refused", "server", a.Server, "offer", offer.Offer, "err", err)
				h.router.Cancel(a.Server, offer.Offer)
				reply.Rejections = append(reply.Rejections, protocol.Rejection{Server: a.Server, Reason: "accept refused: " + err.Error()})
				continue
			}
			return a.Server, a.Signed, protocol.OfferReply{}
		case a.Decision.Accept:
			return a.Server, nil, protocol.OfferReply{}
		default:
			reply.Counters, reply.Rejections = gather(reply.Counters, reply.Rejections, a)
		}
	}
	return "", nil, reply
}

// verifyAccept checks an accept's signature, where one is required.
func (h *House) verifyAccept(a Answer) error {
	if a.Signed == nil {
		return errors.New("the accept came without the offer it answers")
	}
	return h.cfg.Verifier.Verify(a.Server, a.Signed.Body, a.Signed.Sig)
}

// checkResume accepts an offer that resumes a suspended or preempted
// contract of the same client.
func (h *House) checkResume(ctx context.Context, client, id string) error {
	if id == "" {
		return nil
	}
	old, err := h.store.Contract(ctx, id)
	if err != nil || old.Client != client {
		return &bourse.Error{Code: bourse.ENotFound, Field: "resumes", Message: "no contract " + id + " of yours to resume"}
	}
	if old.State != contract.StateSettled || (old.Reason != contract.ReasonSuspended && old.Reason != contract.ReasonPreempted) {
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "resumes",
			Message: fmt.Sprintf("contract %s is %s (%s), not suspended", id, old.State, old.Reason)}
	}
	return nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// scaleOf looks currencies up once; a currency's scale never changes.
func (h *House) scaleOf(ctx context.Context) func(string) (int32, bool) {
	return func(code string) (int32, bool) {
		if scale, ok := h.cachedScale(code); ok {
			return scale, true
		}
		c, err := h.store.Ledger().Currency(ctx, currency.Code(code))
		if err != nil {
			return 0, false
		}
		h.scales.Store(code, c.Scale)
		return c.Scale, true
	}
}

// contractID derives the contract's id from the client's request id, so a
// retried offer finds the contract its first attempt made.
func contractID(client, requestID string) string {
	h := sha256.Sum256([]byte(client + "\x00" + requestID))
	return "c-" + hex.EncodeToString(h[:10])
}

// offerID names one negotiation with servers: the id they see in offer,
// start and cancel (docs/protocol.md), which also keys the negotiation's
// escrow and caps' reserves (escrow/<offer id>), so that an escrow refused
// for want of funds may be tried again under the same request id. It is
// "o-", the House's own random token and the count of its negotiations:
// unique by construction, whatever the clock says (two negotiations on
// one manual clock once got the same <contract>-<nanoseconds>), on every
// instance and after every restart (a new House, a new token). It names
// neither the contract nor the client: every server asked sees it, and
// only the winner learns the contract, from its start. One House's ids
// differ only in their counts, so a node that sorts them (its claims,
// its bookings) sorts them alike on every run of the simulator, one
// House on a virtual clock, which stays deterministic.
func (h *House) offerID() string { return h.negotiationID("o-") }

// quoteID names a quote as offerID names an offer; its "quote-" says
// that it binds no one.
func (h *House) quoteID() string { return h.negotiationID("quote-") }

func (h *House) negotiationID(kind string) string {
	return kind + h.token + "-" + strconv.FormatUint(h.negotiations.Add(1), 10)
}

// cachedScale is the scale of a currency looked up before, with no I/O.
func (h *House) cachedScale(code string) (int32, bool) {
	v, ok := h.scales.Load(code)
	if !ok {
		return 0, false
	}
	return v.(int32), true
}

// checkRequestID accepts ids a client can reuse on retries.
func checkRequestID(id string) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(id, " \t\r\n\x00") {
		return &bourse.Error{Code: bourse.EInvalid, Field: "request_id", Message: "a request id of 1-128 characters without spaces is required"}
	}
	return nil
}

// made is the reply to an offer that made contract c: the contract as
// its client sees it.
func made(c contract.Contract) protocol.OfferReply {
	v := protocol.View(c)
	return protocol.OfferReply{Contract: &v}
}
