package natsvc

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/nats-io/nats.go/jetstream"
)

// startUsage creates the usage stream (idempotently) and consumes it with a
// durable consumer that all instances share: each reading goes to one
// instance, and is redelivered if that instance dies before acknowledging.
func (s *Service) startUsage(ctx, runCtx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("natsvc: jetstream: %w", err)
	}
	log := s.house.Config().Logger
	var stream jetstream.Stream
	if err := withRetry(ctx, s.serve.JetStreamWait, log, "create stream "+protocol.UsageStream, func(ctx context.Context) (err error) {
		stream, err = js.CreateOrUpdateStream(ctx, usageStream(s.serve))
		return err
	}); err != nil {
		return fmt.Errorf("natsvc: create stream %s: %w", protocol.UsageStream, err)
	}
	s.usage = stream
	var cons jetstream.Consumer
	if err := withRetry(ctx, s.serve.JetStreamWait, log, "create the usage consumer", func(ctx context.Context) (err error) {
		cons, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Durable:       "exchange",
			AckPolicy:     jetstream.AckExplicitPolicy,
			AckWait:       s.cfg.AckWait,
			MaxAckPending: 10000,
		})
		return err
	}); err != nil {
		return fmt.Errorf("natsvc: create usage consumer: %w", err)
	}
	s.usageCons = cons
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
	hb := pullHeartbeat(s.cfg.ServerLostAfter, s.cfg.ReadingEvery)
	s.marks.keep = stuckAfter*s.cfg.ServerLostAfter + 2*hb // marks come every hb (watchStream)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case shards[shardOf(m.Subject(), len(shards))] <- m:
		case <-runCtx.Done():
		}
	},
		jetstream.PullHeartbeat(hb), jetstream.PullExpiry(pullExpiry(hb)),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			if deaf(err) {
				// Readings may be waiting that this instance cannot
				// hear: its sweep must not take their silence for
				// a lost server's.
				s.house.Disconnected()
				log.Warn("usage consumer: not hearing readings; the sweep judges no silence until it does again", "err", err)
				return
			}
			log.Debug("usage consumer", "err", err)
		}))
	if err != nil {
		return fmt.Errorf("natsvc: consume usage: %w", err)
	}
	s.consumer = cc
	s.wg.Go(func() { s.watchStream(runCtx, stream, cons, hb) })
	return nil
}

// usageStream is the usage stream's configuration. The stream is a queue
// for the exchange, not a record: a reading is kept until the exchange's
// consumer has counted it or refused it (interest retention), so readings
// for contracts that are not the sender's, or made up, do not stay for
// days. What waits is bounded: by bytes in all, by message size, and by
// readings per contract. A full stream refuses new readings (discard new)
// rather than drop old ones: the publishing server sees the refusal and
// its outbox keeps the reading on disk and tries again, so an honest
// reading is never dropped unseen.
func usageStream(c Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:                 protocol.UsageStream,
		Description:          "Bourse usage readings waiting for the exchange, de-duplicated by Nats-Msg-Id",
		Subjects:             []string{protocol.UsageSubjects, protocol.ReadingsSubjects},
		Storage:              c.StreamStorage,
		Replicas:             c.StreamReplicas,
		Retention:            jetstream.InterestPolicy,
		Duplicates:           10 * time.Minute,
		MaxAge:               7 * 24 * time.Hour,
		MaxBytes:             c.StreamMaxBytes,
		MaxMsgSize:           protocol.MaxReadings,
		MaxMsgsPerSubject:    c.StreamPerContract,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
	}
}

// readingWorkers is how many readings are counted at once.
const readingWorkers = 8

// shardOf picks a reading's worker by its subject, which names the contract.
func shardOf(subject string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(subject))
	return int(h.Sum32() % uint32(n))
}

// handleReading passes one reading to the House and acknowledges it once
// it is stored (or known to change nothing), asks for it again a second
// later when the House could not store it, and drops it for good when the
// House refuses it. A reading the House could not store for want of its
// database leaves the instance as deaf as one it never heard
// (Disconnected).
func (s *Service) handleReading(ctx context.Context, m jetstream.Msg) {
	if server, ok := readingsSubject(m.Subject()); ok {
		s.handleReadings(ctx, server, m)
		return
	}
	server, id, ok := usageSubject(m.Subject())
	if ok && len(m.Data()) > protocol.MaxReading {
		// The stream takes readings messages of up to MaxReadings; a
		// reading on its own is held to MaxReading still.
		s.house.Config().Logger.Warn("reading over its size dropped", "subject", m.Subject(), "bytes", len(m.Data()))
		_ = m.Term()
		return
	}
	if !ok {
		s.house.Config().Logger.Warn("reading on a malformed subject dropped", "subject", m.Subject())
		_ = m.Term()
		return
	}
	// Over its rate a server's readings are refused, counted and logged:
	// readings are cumulative, so an honest server's next one carries what
	// a refused one said, and a flood cannot hold the consumer's pending
	// acknowledgements that every server shares.
	if ok, _ := s.readings.take(server, s.cfg.Now()); !ok {
		s.refused.WithLabelValues("readings").Inc()
		s.warn("server."+server, "reading over the server's rate refused", "server", server, "contract", id)
		_ = m.Term()
		return
	}
	msgID, sig := m.Headers().Get(jetstream.MsgIDHeader), m.Headers().Get(protocol.SigHeader)
	rd, err := protocol.DecodeReading(m.Data())
	if err == nil {
		err = s.house.ReadingOf(ctx, server, id, msgID, rd, m.Data(), sig)
	} else {
		err = s.house.Reading(ctx, server, id, msgID, m.Data(), sig) // refused, counted and logged there
	}
	switch {
	case err == nil:
		_ = m.Ack()
		if rd.Final {
			s.tellStored(server, []protocol.Receipt{{Contract: rd.Contract, Seq: rd.Seq, Status: protocol.ReceiptKept, Stored: rd.Seq}})
		}
	case errors.Is(err, exchange.ErrNoChange):
		_ = m.Ack()
	case exchange.Transient(err):
		if bourse.ErrorCode(err) == bourse.EUnavailable {
			// Heard but not stored (the database is away): until it
			// is back, a contract's last reading is not what its server
			// last said, and silence is no sign of a lost server.
			s.house.Disconnected()
		}
		_ = m.NakWithDelay(time.Second)
	default:
		_ = m.Term()
	}
}

// handleReadings passes each reading of a server's readings message to
// the House, as handleReading passes one on its own, and acknowledges the
// message once every reading in it is stored, changes nothing (stale, or
// its contract ended) or is refused for good; if one could not be stored
// for now, the whole message comes again a second later, and those
// stored meanwhile change nothing then (a reading is idempotent by its
// sequence number). Each reading counts against the server's reading
// rate as one on its own would; one over it is dropped, as a refused one
// is: a final reading so dropped is still the server's, which asks for
// its receipt (receipts.go) and has it counted then. The final readings
// stored are told to the server (tellStored).
//
// The message's contracts are counted at once (countAll), each
// contract's readings in their order: one after another, each waiting
// for its own commit, a server's readings messages are counted no faster
// than a commit a reading, and its final readings wait in the stream
// past its question for their receipts, each then counted twice.
func (s *Service) handleReadings(ctx context.Context, server string, m jetstream.Msg) {
	log := s.house.Config().Logger
	if id := m.Headers().Get(jetstream.MsgIDHeader); id != "" && !strings.HasPrefix(id, server+":") {
		log.Warn("readings under another server's message id dropped", "server", server, "msg_id", id)
		_ = m.Term()
		return
	}
	rs, err := protocol.DecodeReadings(m.Data())
	if err != nil {
		log.Warn("malformed readings message dropped", "server", server, "err", err)
		_ = m.Term()
		return
	}
	var counts []count
	for _, r := range rs.Readings {
		if ok, _ := s.readings.take(server, s.cfg.Now()); !ok {
			s.refused.WithLabelValues("readings").Inc()
			s.warn("server."+server, "reading over the server's rate refused", "server", server)
			continue
		}
		rd, err := protocol.DecodeReading(r.Reading)
		if err != nil {
			log.Warn("malformed reading in a readings message dropped", "server", server, "err", err)
			continue
		}
		counts = append(counts, count{rd: rd, raw: r.Reading, sig: r.Sig})
	}
	s.countAll(ctx, server, counts)
	again := false
	var stored []protocol.Receipt
	for _, c := range counts {
		switch {
		case c.err == nil && c.rd.Final:
			stored = append(stored, protocol.Receipt{Contract: c.rd.Contract, Seq: c.rd.Seq, Status: protocol.ReceiptKept, Stored: c.rd.Seq})
		case exchange.Transient(c.err):
			if bourse.ErrorCode(c.err) == bourse.EUnavailable {
				s.house.Disconnected()
			}
			again = true
		}
	}
	if again {
		_ = m.NakWithDelay(time.Second)
	} else {
		_ = m.Ack()
	}
	s.tellStored(server, stored)
}

// count is a reading of a readings message, decoded, and what counting it
// came to.
type count struct {
	rd  contract.Reading
	raw []byte
	sig string
	err error
}

// countAtOnce bounds the contracts of one readings message counted at
// once: enough to fill a group commit, few enough that a message of a
// few hundred readings does not hold as many goroutines.
const countAtOnce = 32

// countAll has the House count each of server's readings cs, setting
// each one's err: the readings of different contracts at once, those of
// one contract one after another in their order, as a contract's
// readings arrive in order (startUsage). The House's store puts the
// counts that run at once in shared transactions.
func (s *Service) countAll(ctx context.Context, server string, cs []count) {
	if len(cs) == 1 {
		cs[0].err = s.house.ReadingOf(ctx, server, cs[0].rd.Contract, "", cs[0].rd, cs[0].raw, cs[0].sig)
		return
	}
	byContract := map[string][]int{}
	var order []string
	for i, c := range cs {
		if _, ok := byContract[c.rd.Contract]; !ok {
			order = append(order, c.rd.Contract)
		}
		byContract[c.rd.Contract] = append(byContract[c.rd.Contract], i)
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, countAtOnce)
	for _, id := range order {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, i := range byContract[id] {
				c := &cs[i]
				c.err = s.house.ReadingOf(ctx, server, c.rd.Contract, "", c.rd, c.raw, c.sig)
			}
		})
	}
	wg.Wait()
}

// readingsSubject parses bourse.v1.server.<server>.readings.
func readingsSubject(subj string) (server string, ok bool) {
	t := strings.Split(subj, ".")
	if len(t) != 5 || t[0]+"."+t[1] != protocol.Prefix || t[2] != protocol.RoleServer || t[4] != protocol.VerbReadings {
		return "", false
	}
	return t[3], true
}

// usageSubject parses bourse.v1.server.<server>.usage.<contract>.
func usageSubject(subj string) (server, id string, ok bool) {
	t := strings.Split(subj, ".")
	if len(t) != 6 || t[0]+"."+t[1] != protocol.Prefix || t[2] != protocol.RoleServer || t[4] != protocol.VerbUsage {
		return "", "", false
	}
	return t[3], t[5], true
}
