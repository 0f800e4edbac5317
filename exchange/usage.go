package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// startUsage creates the usage stream (idempotently) and consumes it with a
// durable consumer that all instances share: each reading goes to one
// instance, and is redelivered if that instance dies before acknowledging.
func (s *Service) startUsage(ctx, runCtx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("exchange: jetstream: %w", err)
	}
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        protocol.UsageStream,
		Description: "Bourse usage readings, de-duplicated by Nats-Msg-Id",
		Subjects:    []string{protocol.UsageSubjects},
		Storage:     s.cfg.StreamStorage,
		Replicas:    s.cfg.StreamReplicas,
		Duplicates:  10 * time.Minute,
		MaxAge:      7 * 24 * time.Hour,
	})
	if err != nil {
		return fmt.Errorf("exchange: create stream %s: %w", protocol.UsageStream, err)
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       "exchange",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       s.cfg.AckWait,
		MaxAckPending: 10000,
	})
	if err != nil {
		return fmt.Errorf("exchange: create usage consumer: %w", err)
	}
	// Readings are counted by a few workers at once, each contract always by
	// the same one: contracts settle in parallel (on SQL, in parallel
	// transactions) and one contract's readings still arrive in order.
	shards := make([]chan jetstream.Msg, readingWorkers)
	for i := range shards {
		shards[i] = make(chan jetstream.Msg, 256)
		s.readers.Add(1)
		go func() {
			defer s.readers.Done()
			for {
				select {
				case m := <-shards[i]:
					s.handleReading(runCtx, m)
				case <-runCtx.Done():
					return // unacknowledged readings are redelivered
				}
			}
		}()
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case shards[shardOf(m.Subject(), len(shards))] <- m:
		case <-runCtx.Done():
		}
	},
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			s.log.Debug("usage consumer", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("exchange: consume usage: %w", err)
	}
	s.consumer = cc
	return nil
}

// readingWorkers is how many readings are counted at once.
const readingWorkers = 8

// shardOf picks a reading's worker by its subject, which names the contract.
func shardOf(subject string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

// handleReading counts one reading; the final one settles the contract.
// It acknowledges once the reading is stored (or known to change nothing),
// asks for redelivery when the store fails, and drops for good what no
// retry could make acceptable: a reading under another server's message
// id, a malformed or unbelievable reading, one for another server's
// contract.
func (s *Service) handleReading(ctx context.Context, m jetstream.Msg) {
	server, id, ok := usageSubject(m.Subject())
	if !ok {
		s.metrics.readings.WithLabelValues("rejected").Inc()
		s.log.Warn("reading on a malformed subject dropped", "subject", m.Subject())
		_ = m.Term()
		return
	}
	// JetStream de-duplicates message ids across the stream, so a server
	// that publishes under another's id spends it; the real server then
	// publishes again under a fresh one (server.Agent). Such a reading is
	// an attempt to block another server's: say so.
	if msgID := m.Headers().Get(jetstream.MsgIDHeader); msgID != "" && !strings.HasPrefix(msgID, server+":") {
		s.metrics.readings.WithLabelValues("foreign_id").Inc()
		s.log.Warn("reading under another server's message id dropped", "server", server, "contract", id, "msg_id", msgID)
		_ = m.Term()
		return
	}
	r, err := protocol.DecodeReading(m.Data())
	if err == nil && r.Contract != id {
		err = &bourse.Error{Code: bourse.EInvalid, Field: "contract", Message: "a reading of " + r.Contract + " on the subject of " + id}
	}
	if err == nil {
		err = s.count(ctx, server, r)
	}
	switch {
	case err == nil:
		s.metrics.readings.WithLabelValues("counted").Inc()
		_ = m.Ack()
	case errors.Is(err, ErrNoChange):
		s.metrics.readings.WithLabelValues("stale").Inc()
		_ = m.Ack()
	case transient(err):
		s.log.Warn("reading not stored; redelivery asked", "contract", id, "seq", r.Seq, "err", err)
		_ = m.NakWithDelay(time.Second)
	default:
		s.metrics.readings.WithLabelValues("rejected").Inc()
		s.log.Warn("reading rejected", "contract", id, "server", server, "seq", r.Seq, "err", err)
		_ = m.Term()
	}
}

// transient reports whether err may pass if the same thing is tried again.
func transient(err error) bool {
	code := bourse.ErrorCode(err)
	return code == bourse.EInternal || code == bourse.EUnavailable
}

// count stores r as the contract's latest reading if it is newer and
// believable, and settles the contract if r is final.
func (s *Service) count(ctx context.Context, server string, r trade.Reading) error {
	now := s.cfg.Now().UTC()
	var final bool
	store := func(c *trade.Contract) error {
		if c.Server != server {
			return &bourse.Error{Code: bourse.EPermission, Message: "reading from " + server + " for a contract of " + c.Server}
		}
		if !c.HoldsEscrow() || (c.Reading != nil && r.Seq <= c.Reading.Seq) {
			return ErrNoChange
		}
		if err := s.believable(c, r, now); err != nil {
			return err
		}
		rr := r
		c.Reading, c.LastSeen = &rr, now
		if c.State == trade.StateAccepted {
			c.State, c.StartedAt = trade.StateRunning, r.At.Add(-time.Duration(r.T)).UTC()
		}
		return nil
	}
	c, err := s.updatePriced(ctx, r.Contract, func(c *trade.Contract, scale int32) ([]currency.Op, error) {
		if err := store(c); err != nil || !r.Final {
			return nil, err
		}
		final = true
		return s.settle(c, finalReason(r), scale)
	})
	if err != nil && final && !transient(err) {
		// The ledger refused the settlement. Keep the final reading all the
		// same: the watchdog settles on it once the server falls silent,
		// with backoff while it fails, and by the fixed rule in the end.
		s.log.Error("a final reading does not settle; kept for the watchdog", "contract", r.Contract, "err", err)
		final = false
		c, err = s.store.Update(ctx, r.Contract, func(c *trade.Contract) ([]currency.Op, error) { return nil, store(c) })
	}
	if err != nil {
		return err
	}
	if final {
		s.metrics.settled.WithLabelValues(string(c.Reason)).Inc()
		s.event(protocol.EventSettled, c)
		return nil
	}
	ev := protocol.Event{Type: protocol.EventReading, Contract: c, At: now}
	if scale, ok := s.scaleOf(ctx)(c.Terms.Currency); ok {
		ev.Due, _ = contract.Due(c.Terms, r.Usage(), scale)
	}
	s.publish(c.Client, ev)
	return nil
}

// finalReason is why a final reading says its contract stopped.
func finalReason(r trade.Reading) trade.Reason {
	if r.Reason == "" {
		return trade.ReasonCompleted
	}
	return r.Reason
}

// believable judges a reading by the exchange's own clock, which is all
// it trusts (docs/protocol.md, "What the exchange believes"). A job
// cannot start before its contract was accepted, nor a booking before its
// start_at, so a reading's T cannot exceed the time since then, nor its
// "at" lie ahead of now, each but by ClockSkew. A reading's "at" may lie
// far in the past: readings wait in outboxes and streams through outages.
// U needs no bound of its own: pricing clamps it to gpus·T (and S to
// gpus), T being bounded here.
func (s *Service) believable(c *trade.Contract, r trade.Reading, now time.Time) error {
	skew := s.cfg.ClockSkew
	earliest := later(c.AcceptedAt, c.Terms.StartAt.UTC())
	switch {
	case r.At.After(now.Add(skew)):
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is ahead of the exchange's clock (%s) by more than %v", r.At.UTC().Format(time.RFC3339Nano), now.Format(time.RFC3339Nano), skew)}
	case r.At.Before(earliest.Add(-skew)):
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is before the contract could start (%s)", r.At.UTC().Format(time.RFC3339Nano), earliest.Format(time.RFC3339Nano))}
	case time.Duration(r.T) > now.Sub(earliest)+skew:
		return &bourse.Error{Code: bourse.EInvalid, Field: "t", Message: fmt.Sprintf(
			"%v of wall time, but by the exchange's clock the contract can have run %v at most", time.Duration(r.T), now.Sub(earliest).Round(time.Millisecond))}
	}
	return nil
}

// settle changes c to settled on its last reading and returns the capture
// that pays the server and refunds the rest, to commit together. scale is
// the contract's currency's.
func (s *Service) settle(c *trade.Contract, reason trade.Reason, scale int32) ([]currency.Op, error) {
	var u contract.Usage
	if c.Reading != nil {
		u = c.Reading.Usage()
	}
	st, err := contract.Charge(c.Terms, u, scale)
	if err != nil {
		return nil, fmt.Errorf("settle %s: %w", c.ID, err)
	}
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = trade.StateSettled, reason, st.Charge, st.Refund, s.cfg.Now().UTC()
	cur := currency.Code(c.Terms.Currency)
	return []currency.Op{currency.Capture{
		Key: "settle/" + c.ID, Hold: currency.HoldID(c.ID), To: currency.RevenueID(cur, c.Server),
		Amount: st.Charge, Memo: "contract " + c.ID + " " + string(reason),
	}}, nil
}

// void changes an accepted contract to voided and returns the release of
// its whole prepayment.
func (s *Service) void(c *trade.Contract, reason trade.Reason) []currency.Op {
	c.State, c.Reason, c.Charge, c.Refund, c.SettledAt = trade.StateVoided, reason, decimal.Zero, c.Terms.Prepayment, s.cfg.Now().UTC()
	return []currency.Op{currency.Void{Key: "void/" + c.ID, Hold: currency.HoldID(c.ID), Memo: "contract " + c.ID + " " + string(reason)}}
}

// errNoScale stops an update whose currency's scale is not cached yet.
var errNoScale = errors.New("currency scale not cached")

// updatePriced is store.Update for changes that price the contract. The
// currency's scale is looked up outside the store's transaction: a lookup
// inside would hold one database connection while waiting for another,
// and with every connection so held, wait for ever.
func (s *Service) updatePriced(ctx context.Context, id string, change func(c *trade.Contract, scale int32) ([]currency.Op, error)) (trade.Contract, error) {
	for attempt := 0; ; attempt++ {
		var missing string
		c, err := s.store.Update(ctx, id, func(c *trade.Contract) ([]currency.Op, error) {
			scale, ok := s.cachedScale(c.Terms.Currency)
			if !ok {
				missing = c.Terms.Currency
				return nil, errNoScale
			}
			return change(c, scale)
		})
		if !errors.Is(err, errNoScale) || attempt > 0 {
			return c, err
		}
		if _, ok := s.scaleOf(ctx)(missing); !ok {
			return c, fmt.Errorf("contract %s: currency %s unknown", id, missing)
		}
	}
}

// usageSubject parses bourse.v1.server.<server>.usage.<contract>.
func usageSubject(subj string) (server, id string, ok bool) {
	t := strings.Split(subj, ".")
	if len(t) != 6 || t[0]+"."+t[1] != protocol.Prefix || t[2] != protocol.RoleServer || t[4] != protocol.VerbUsage {
		return "", "", false
	}
	return t[3], t[5], true
}

// event tells the client about its contract.
func (s *Service) event(typ protocol.EventType, c trade.Contract) {
	s.publish(c.Client, protocol.Event{Type: typ, Contract: c, At: s.cfg.Now().UTC()})
}

func (s *Service) publish(client string, ev protocol.Event) {
	body, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("encode event", "err", err)
		return
	}
	_ = s.nc.Publish(protocol.DeliverSubject(client, protocol.DeliverEvent), body)
}
