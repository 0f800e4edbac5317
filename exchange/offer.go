package exchange

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// handleOffer turns an offer into a contract: validate, check funds, route
// to matching servers, take the first accept, escrow and record, start.
func (s *Service) handleOffer(r micro.Request) {
	began := s.cfg.Now()
	reply, err := s.offer(context.Background(), r)
	s.metrics.negotiation.Observe(s.cfg.Now().Sub(began).Seconds())
	switch {
	case err != nil:
		s.metrics.offers.WithLabelValues("error").Inc()
		if bourse.ErrorCode(err) == bourse.EInternal {
			s.log.Error("offer failed", "subject", r.Subject(), "err", err)
		}
		_ = natswire.RespondError(r, err)
		return
	case reply.Contract != nil:
		s.metrics.offers.WithLabelValues("contract").Inc()
	case len(reply.Counters) > 0:
		s.metrics.offers.WithLabelValues("countered").Inc()
	default:
		s.metrics.offers.WithLabelValues("rejected").Inc()
	}
	respond(r, reply)
}

func (s *Service) offer(ctx context.Context, r micro.Request) (protocol.OfferReply, error) {
	client, err := sender(r, protocol.RoleClient)
	if err != nil {
		return protocol.OfferReply{}, err
	}
	var req protocol.OfferRequest
	if err := decode(r, &req); err != nil {
		return protocol.OfferReply{}, underTerms(err) // only terms' decoder names fields
	}
	if err := checkRequestID(req.RequestID); err != nil {
		return protocol.OfferReply{}, err
	}
	t := req.Terms
	if t.Client == "" {
		t.Client = client
	}
	if t.Client != client {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EPermission, Field: "terms.client",
			Message: fmt.Sprintf("offer names client %q but was sent by %q", t.Client, client)}
	}
	id := contractID(client, req.RequestID)
	if c, err := s.store.Contract(ctx, id); err == nil {
		return protocol.OfferReply{Contract: &c}, nil // a retry: the first answer
	} else if bourse.ErrorCode(err) != bourse.ENotFound {
		return protocol.OfferReply{}, err
	}
	if err := contract.Validate(t, s.scaleOf(ctx)); err != nil {
		return protocol.OfferReply{}, underTerms(err)
	}
	if err := s.checkStartAt(t.StartAt); err != nil {
		return protocol.OfferReply{}, err
	}
	if req.Counter != "" && t.Server == "" {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.server", Message: "taking a counter-offer needs the server that made it"}
	}
	if err := s.checkResume(ctx, client, req.Resumes); err != nil {
		return protocol.OfferReply{}, err
	}
	wallet := currency.WalletID(currency.Code(t.Currency), client)
	bal, err := s.store.Ledger().Balance(ctx, wallet)
	if bourse.ErrorCode(err) == bourse.ENotFound {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.ENotFound, Field: "terms.client",
			Message: fmt.Sprintf("client %s has no %s wallet; an administrator opens one", client, t.Currency)}
	} else if err != nil {
		return protocol.OfferReply{}, err
	}
	if bal.Available.LessThan(t.Prepayment) {
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.EInsufficientFunds, Field: "terms.prepayment",
			Message: fmt.Sprintf("prepayment %s exceeds the available %s %s", t.Prepayment, bal.Available, t.Currency)}
	}
	servers := s.servers.match(t)
	if len(servers) == 0 {
		if s.servers.live() == 0 {
			return protocol.OfferReply{}, &bourse.Error{Code: bourse.ENoMatch,
				Message: "no server has registered with this exchange yet (servers speak every second once they run); try again shortly"}
		}
		return protocol.OfferReply{}, &bourse.Error{Code: bourse.ENoMatch, Field: "terms.gpus",
			Message: fmt.Sprintf("no live server has %d %s for %s", t.GPUs, describeClass(t.Class), t.Currency)}
	}
	offerID := id + "-" + fmt.Sprint(s.cfg.Now().UnixNano())
	win, reply := s.negotiate(ctx, protocol.ServerOffer{Offer: offerID, Terms: t, Counter: req.Counter}, servers)
	if win == "" {
		if req.Counter != "" && len(reply.Rejections) == 1 && strings.HasPrefix(reply.Rejections[0].Reason, string(bourse.ECapacityGone)) {
			return protocol.OfferReply{}, &bourse.Error{Code: bourse.ECapacityGone, Field: "counter",
				Message: "the counter-offer's GPUs were taken meanwhile"}
		}
		return reply, nil
	}
	c, err := s.open(ctx, id, offerID, win, t, req)
	if err != nil {
		s.cancelAccept(win, offerID)
		return protocol.OfferReply{}, err
	}
	return protocol.OfferReply{Contract: &c}, nil
}

// open escrows and records the contract that win accepted, then starts it.
func (s *Service) open(ctx context.Context, id, offerID, win string, t contract.Terms, req protocol.OfferRequest) (trade.Contract, error) {
	now := s.cfg.Now().UTC()
	t.Server = win
	// A booking starts at its start_at; the deadline to start counts from
	// then, and the hold's deadline with it.
	c := trade.Contract{
		ID: id, Client: t.Client, Server: win, Terms: t, State: trade.StateAccepted,
		Resumes: req.Resumes, AcceptedAt: now, StartDeadline: later(now, t.StartAt.UTC()).Add(s.cfg.StartTimeout),
	}
	// The key is the negotiation's, not the request's: an escrow that
	// failed (insufficient funds) may be retried with the same request id
	// after a top-up. The hold id is the contract id, so a second escrow of
	// one contract is impossible all the same.
	// The hold's deadline is StuckLimit past the latest a legitimate
	// contract ends (started by its deadline, run for its time limit,
	// heard of within ServerLostAfter): the watchdog ends a contract whose
	// hold is due by the fixed rule (watchdog.go, expireDue).
	reserve := currency.Reserve{
		Key: "escrow/" + offerID, Hold: currency.HoldID(id), From: currency.WalletID(currency.Code(t.Currency), t.Client),
		Amount: t.Prepayment, Deadline: c.StartDeadline.Add(t.TimeLimit + s.cfg.ServerLostAfter + s.cfg.StuckLimit),
		Memo: "prepayment of contract " + id,
	}
	stored, created, err := s.store.Open(ctx, c, reserve)
	if err != nil {
		return trade.Contract{}, err
	}
	if !created {
		// A retry of this request won meanwhile: keep its contract and
		// release this negotiation's accept.
		s.cancelAccept(win, offerID)
		return stored, nil
	}
	s.metrics.escrowed.Inc()
	s.event(protocol.EventAccepted, stored)
	// The negotiation ends with the escrow: the client has its contract now,
	// and the start follows, reported by a started event. Waiting for it
	// would add a round trip to the server to every offer's latency.
	s.starts.Add(1)
	go func() {
		defer s.starts.Done()
		s.start(context.Background(), offerID, stored)
	}()
	return stored, nil
}

// start tells the server to start the job. If it does not answer, the
// contract stays accepted: a reading will show it running, or the watchdog
// voids it at its start deadline.
func (s *Service) start(ctx context.Context, offerID string, c trade.Contract) trade.Contract {
	body, _ := json.Marshal(protocol.Start{Offer: offerID, Contract: c})
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Negotiation)
	defer cancel()
	msg, err := s.nc.RequestWithContext(ctx, protocol.DeliverSubject(c.Server, protocol.DeliverStart), body)
	if err == nil {
		err = natswire.DecodeError(msg)
	}
	var st protocol.Started
	if err == nil {
		err = json.Unmarshal(msg.Data, &st)
	}
	if err != nil {
		s.log.Warn("server did not start contract", "contract", c.ID, "server", c.Server, "err", err)
		return c
	}
	if st.Booked {
		// The server starts it at start_at and says so then.
		s.log.Debug("contract booked", "contract", c.ID, "server", c.Server, "at", st.At)
		return c
	}
	got, err := s.markStarted(ctx, c.Server, st)
	if err != nil {
		s.log.Warn("mark started", "contract", st.Contract, "err", err)
		return c
	}
	return got
}

// markStarted records that server started the job of contract st.Contract.
// Another server's contract is "not found", so that ids reveal nothing.
func (s *Service) markStarted(ctx context.Context, server string, st protocol.Started) (trade.Contract, error) {
	notFound := &bourse.Error{Code: bourse.ENotFound, Field: "contract", Message: "no contract " + st.Contract + " on this server"}
	c, err := s.store.Update(ctx, st.Contract, func(c *trade.Contract) ([]currency.Op, error) {
		if c.Server != server {
			return nil, notFound
		}
		if st.Booked {
			return nil, ErrNoChange // a booking confirmed; the start follows
		}
		if c.State != trade.StateAccepted {
			if c.GPUs == nil && c.State == trade.StateRunning {
				c.GPUs = st.GPUs
				return nil, nil
			}
			return nil, ErrNoChange
		}
		c.State, c.StartedAt, c.GPUs, c.LastSeen = trade.StateRunning, st.At.UTC(), st.GPUs, s.cfg.Now().UTC()
		return nil, nil
	})
	switch {
	case err == nil:
		s.event(protocol.EventStarted, c)
		return c, nil
	case errors.Is(err, ErrNoChange):
		return c, nil
	case bourse.ErrorCode(err) == bourse.ENotFound:
		return trade.Contract{}, notFound
	}
	return trade.Contract{}, err
}

// negotiate sends the offer to every candidate at once. The first accept
// wins and is answered at once; later accepts are cancelled. With no
// accept, the reply gathers every counter-offer and rejection that arrived
// before the negotiation deadline.
func (s *Service) negotiate(ctx context.Context, offer protocol.ServerOffer, servers []string) (string, protocol.OfferReply) {
	body, _ := json.Marshal(offer)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Negotiation)
	type answer struct {
		server string
		d      protocol.Decision
		err    error
	}
	answers := make(chan answer, len(servers))
	for _, srv := range servers {
		go func() {
			msg, err := s.nc.RequestWithContext(ctx, protocol.DeliverSubject(srv, protocol.DeliverOffer), body)
			a := answer{server: srv, err: err}
			if err == nil {
				if a.err = natswire.DecodeError(msg); a.err == nil {
					a.err = json.Unmarshal(msg.Data, &a.d)
				}
			}
			answers <- a
		}()
	}
	var reply protocol.OfferReply
	for i := range servers {
		a := <-answers
		switch {
		case a.err != nil:
			reply.Rejections = append(reply.Rejections, protocol.Rejection{Server: a.server, Reason: "no answer: " + a.err.Error()})
		case a.d.Accept:
			go func() { // cancel the accepts that arrive after the winner
				defer cancel()
				for range len(servers) - i - 1 {
					if late := <-answers; late.err == nil && late.d.Accept {
						s.cancelAccept(late.server, offer.Offer)
					}
				}
			}()
			return a.server, protocol.OfferReply{}
		default:
			for _, c := range a.d.Counters {
				c.Server = a.server
				c.Terms.Server = a.server
				reply.Counters = append(reply.Counters, c)
			}
			reason := a.d.Reason
			if a.d.Code != "" {
				reason = string(a.d.Code) + ": " + reason
			}
			if len(a.d.Counters) == 0 {
				reply.Rejections = append(reply.Rejections, protocol.Rejection{Server: a.server, Reason: reason})
			}
		}
	}
	cancel()
	return "", reply
}

func (s *Service) cancelAccept(server, offerID string) {
	body, _ := json.Marshal(protocol.Cancel{Offer: offerID})
	_ = s.nc.Publish(protocol.DeliverSubject(server, protocol.DeliverCancel), body)
}

// checkResume accepts an offer that resumes a suspended or preempted
// contract of the same client.
func (s *Service) checkResume(ctx context.Context, client, id string) error {
	if id == "" {
		return nil
	}
	old, err := s.store.Contract(ctx, id)
	if err != nil || old.Client != client {
		return &bourse.Error{Code: bourse.ENotFound, Field: "resumes", Message: "no contract " + id + " of yours to resume"}
	}
	if old.State != trade.StateSettled || (old.Reason != trade.ReasonSuspended && old.Reason != trade.ReasonPreempted) {
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "resumes",
			Message: fmt.Sprintf("contract %s is %s (%s), not suspended", id, old.State, old.Reason)}
	}
	return nil
}

// bookingSkew is how far in the past an offer's start_at may be: the
// client's clock and the time its offer travels.
const bookingSkew = time.Minute

// checkStartAt refuses a start that has passed or is further ahead than
// Config.MaxBookAhead. A start just past starts at once.
func (s *Service) checkStartAt(at time.Time) error {
	if at.IsZero() {
		return nil
	}
	now := s.cfg.Now()
	switch {
	case at.Before(now.Add(-bookingSkew)):
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.start_at",
			Message: fmt.Sprintf("start %s has passed (it is %s)", at.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))}
	case at.After(now.Add(s.cfg.MaxBookAhead)):
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.start_at",
			Message: fmt.Sprintf("start %s is more than %v ahead", at.UTC().Format(time.RFC3339), s.cfg.MaxBookAhead)}
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
func (s *Service) scaleOf(ctx context.Context) func(string) (int32, bool) {
	return func(code string) (int32, bool) {
		if scale, ok := s.cachedScale(code); ok {
			return scale, true
		}
		c, err := s.store.Ledger().Currency(ctx, currency.Code(code))
		if err != nil {
			return 0, false
		}
		s.scales.Store(code, c.Scale)
		return c.Scale, true
	}
}

// contractID derives the contract's id from the client's request id, so a
// retried offer finds the contract its first attempt made.
func contractID(client, requestID string) string {
	h := sha256.Sum256([]byte(client + "\x00" + requestID))
	return "c-" + hex.EncodeToString(h[:10])
}

func describeClass(c contract.Class) string {
	s := "GPUs"
	if c.Model != "" {
		s = c.Model + " GPUs"
	}
	if c.MinMemoryMiB > 0 {
		s += fmt.Sprintf(" with at least %d MiB", c.MinMemoryMiB)
	}
	return s
}

// underTerms names a terms field as the request does ("terms.gpus").
func underTerms(err error) error {
	var e *bourse.Error
	if errors.As(err, &e) && e.Field != "" && !strings.HasPrefix(e.Field, "terms.") {
		c := *e
		c.Field = "terms." + e.Field
		return &c
	}
	return err
}

// cachedScale is the scale of a currency looked up before, with no I/O.
func (s *Service) cachedScale(code string) (int32, bool) {
	v, ok := s.scales.Load(code)
	if !ok {
		return 0, false
	}
	return v.(int32), true
}
