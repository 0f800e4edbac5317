// Package natsvc serves an exchange.House over NATS: the micro service
// "bourse-exchange" for the requests of clients and servers, the
// heartbeat subscription, the JetStream consumer of usage readings, the
// sweep's ticker, and a Router and Notifier that reach servers and clients
// over NATS. It holds none of the market's rules: those are the House's.
// Instances are stateless: several in one queue group share one Store.
package natsvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// Config configures a Service: the House's rules and timings, and how it
// is served. Conn and Config.Store are required; Config.Router and
// Config.Notifier are the Service's own. Every other zero value takes the
// default in its comment.
type Config struct {
	exchange.Config
	Conn *nats.Conn

	Name    string // micro service name, "bourse-exchange"
	Version string // micro service version, "0.1.0"
	// MaxInFlight bounds the offers, suspends and kills handled at once
	// before "unavailable", 4096.
	MaxInFlight int
	// FanOut is how many servers an offer is asked at once, 1: the
	// cheapest first, the next once it refuses or is slow (router.Ask),
	// within the House's RouteTo.
	FanOut int
	// Limits bound what one client or server can take of the instance.
	Limits Limits
	// StreamStorage is where JetStream keeps readings: file (default) or
	// memory (the demo).
	StreamStorage  jetstream.StorageType
	StreamReplicas int // 1; 3 on a NATS cluster
	// StreamMaxBytes bounds the readings waiting in the usage stream, 1 GiB
	// by default; StreamPerContract the readings waiting for one contract,
	// 100,000 (a day of readings every second while no exchange runs).
	// Past either the stream refuses new readings, and servers keep them.
	StreamMaxBytes    int64
	StreamPerContract int64
	// Output bounds the stream of jobs' output (output.go).
	Output OutputLimits
	// Files bounds the clients' files, and the buckets that keep them
	// (files.go).
	Files FilesLimits
	// CheckEvery is how often the instance checks that it can serve: its
	// database answers and the usage stream has a leader (serving.go), 1s.
	CheckEvery time.Duration
	// JetStreamWait is how long Start waits for JetStream to create the
	// usage stream and its consumer, retrying (2 minutes): a NATS cluster
	// just started has no stream leader for a while.
	JetStreamWait time.Duration
}

func (c *Config) defaults() error {
	if c.Conn == nil {
		return errors.New("natsvc: Config.Conn is required")
	}
	if c.Name == "" {
		c.Name = "bourse-exchange"
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4096
	}
	if c.FanOut <= 0 {
		c.FanOut = 1
	}
	if c.StreamReplicas <= 0 {
		c.StreamReplicas = 1
	}
	if c.StreamMaxBytes <= 0 {
		c.StreamMaxBytes = 1 << 30
	}
	if c.StreamPerContract <= 0 {
		c.StreamPerContract = 100_000
	}
	if c.CheckEvery <= 0 {
		c.CheckEvery = time.Second
	}
	if c.JetStreamWait <= 0 {
		c.JetStreamWait = 2 * time.Minute
	}
	if c.HeartbeatsPerSecond == 0 {
		c.HeartbeatsPerSecond = DefaultHeartbeatsPerSecond
	}
	c.Limits.defaults()
	c.Output.defaults(c.StreamStorage)
	c.Files.defaults(c.StreamStorage)
	return nil
}

// DefaultHeartbeatsPerSecond paces the servers' heartbeats (exchange
// Config.HeartbeatsPerSecond; a negative value does not): every instance
// hears about this many a second from a fleet of any size, a hundred
// servers or more beating less often than every Heartbeat. At 20 µs of
// an instance's CPU each, 2% of a core.
const DefaultHeartbeatsPerSecond = 100

// Service is a running exchange instance.
type Service struct {
	cfg      exchange.Config // as the House filled it in
	serve    Config
	nc       *nats.Conn
	house    *exchange.House
	busy     prometheus.Counter
	refused  *prometheus.CounterVec
	dropped  *prometheus.CounterVec // output chunks not relayed to clients, by why
	inflight chan struct{}
	perParty counts         // each client's requests among inflight
	limiter  *buckets       // each party's request rate
	beats    *buckets       // each server's heartbeats, which reach every instance
	echoes   echoes         // each server's last heartbeat heard in full (heartbeat.go)
	answers  *buckets       // each party's rate_limited answers
	readings *buckets       // each server's reading rate
	confirms *buckets       // each server's rate of readings asked about (receipts.go)
	logLines *buckets       // each party's refusals logged
	peers    *peers         // the instances running, for the limits' shares
	requests sync.WaitGroup // requests to servers sent on the House's behalf

	svcMu     sync.Mutex
	svc       micro.Service // nil while the instance does not serve (serving.go)
	closed    bool          // Stop was called: serve no more
	serving   serving       // whether the instance can serve, and why not
	subs      []*nats.Subscription
	js        jetstream.JetStream // the servers' output streams, read for their clients
	outputs   sync.Map            // servers whose output stream this instance has made (ensureOutput)
	buckets   sync.Map            // clients' files buckets this instance has opened, by client (files.go)
	consumer  jetstream.ConsumeContext
	usage     jetstream.Stream   // the usage stream, once startUsage has it
	usageCons jetstream.Consumer // and its consumer
	marks     marks              // the stream's last sequence by time (backlog)
	readers   sync.WaitGroup     // the reading workers
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

// Start validates cfg, creates the usage stream if needed and starts
// serving. Stop it with Stop.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Service{serve: cfg, nc: cfg.Conn, inflight: make(chan struct{}, cfg.MaxInFlight),
		busy: prometheus.NewCounter(prometheus.CounterOpts{Name: "bourse_exchange_busy_total",
			Help: "Requests refused because too many were in flight."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_refused_total",
			Help: "Requests and readings refused before any handler, by reason: reply_subject (an answer asked for outside the sender's inbox), rate (over the party's rate, answered rate_limited), dropped (over it again, unanswered), heartbeat (a server's heartbeats over its rate), in_flight (over the client's share of negotiations), readings (over the server's reading rate), receipts (readings asked about over the server's rate: answered again, kept by the server)."},
			[]string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bourse_exchange_output_dropped_total",
			Help: "Chunks of jobs' output a server stored that were not relayed to the contract's client, by reason: malformed (a bad stream or offset header), over_cap (past the cap the server declared at the start, or its quota)."},
			[]string{"reason"}),
		perParty: counts{max: cfg.Limits.InFlight, by: map[string]int{}},
		limiter:  newBuckets(cfg.Limits.Requests, cfg.Limits.Burst),
		beats:    newBuckets(cfg.Limits.Requests, cfg.Limits.Burst),
		answers:  newBuckets(cfg.Limits.Requests, cfg.Limits.Burst),
		readings: newBuckets(cfg.Limits.Readings, cfg.Limits.ReadingBurst),
		confirms: newBuckets(cfg.Limits.Readings, cfg.Limits.ReadingBurst),
		logLines: newBuckets(1, 5)}
	hc := cfg.Config
	hc.Router, hc.Notifier = (*router)(s), (*router)(s)
	hc.Backlog = (*backlog)(s)
	if cfg.Files.MaxBytes > 0 {
		hc.Files = (*files)(s)
	}
	// Instances share a store and may hear servers apart (a NATS node
	// cut off): each records what it hears there for the others' sweeps.
	hc.Instance, hc.ShareHearing = newInstanceID(), true
	hc.KeepRecords = true // from the store every instance shares
	house, err := exchange.New(hc)
	if err != nil {
		return nil, err
	}
	s.house, s.cfg = house, house.Config()
	s.peers = newPeers(hc.Instance, s.cfg.Now())
	if hc.Metrics != nil {
		// How close the instance is to MaxInFlight, the one limit that
		// is its own and not a share of the market's.
		inFlight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bourse_exchange_in_flight",
			Help: "Offers, suspends and kills this instance is handling now, of its MaxInFlight."},
			func() float64 { return float64(len(s.inflight)) })
		serving := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bourse_exchange_serving",
			Help: "1 while this instance is in the queue group and answers requests; 0 while it left it, unable to reach its database or the usage stream (its log and /readyz say why)."},
			func() float64 {
				if s.served() {
					return 1
				}
				return 0
			})
		for _, c := range []prometheus.Collector{s.busy, s.refused, s.dropped, inFlight, serving} {
			if err := hc.Metrics.Register(c); err != nil {
				return nil, fmt.Errorf("natsvc: register metrics: %w", err)
			}
		}
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if err := s.startUsage(ctx, runCtx); err != nil {
		cancel()
		return nil, err
	}
	if err := s.startOutput(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("natsvc: output streams: %w", err)
	}
	if err := s.startHeartbeats(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startEndpoints(); err != nil {
		s.Stop()
		return nil, err
	}
	if err := s.startPeers(runCtx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("natsvc: peers: %w", err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.sweep(runCtx)
	}()
	s.wg.Go(func() { s.publishMarket(runCtx) })
	s.wg.Go(func() { s.match(runCtx) })
	s.wg.Go(func() { s.watchServing(runCtx) })
	return s, nil
}

// House is the rules this Service serves.
func (s *Service) House() *exchange.House { return s.house }

// LiveServers counts the servers this instance has heard from recently.
func (s *Service) LiveServers() int { return s.house.LiveServers() }

// Stop stops taking requests, lets handlers in flight finish, and stops the
// usage consumer and the sweep. Unacknowledged readings are redelivered
// to another instance.
func (s *Service) Stop() {
	s.svcMu.Lock()
	s.closed = true
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	s.svcMu.Unlock()
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	if s.consumer != nil {
		s.consumer.Stop()
	}
	for range cap(s.inflight) { // wait for offers in negotiation
		s.inflight <- struct{}{}
	}
	s.requests.Wait()
	s.cancel()
	s.wg.Wait()
	s.readers.Wait()
}

// sweep calls the House's Sweep every SweepEvery, and tells it when this
// instance is cut off from NATS, where the readings wait and the servers
// speak.
func (s *Service) sweep(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.nc.Status() != nats.CONNECTED {
				s.house.Isolated()
			}
			s.house.Sweep(ctx)
			now := s.cfg.Now()
			s.limiter.sweep(now)
			s.beats.sweep(now)
			s.answers.sweep(now)
			s.readings.sweep(now)
			s.confirms.sweep(now)
			s.logLines.sweep(now)
		}
	}
}

// errStopped: the Service was stopped, and serves no more.
var errStopped = errors.New("natsvc: the service was stopped")

// startEndpoints joins the queue group: the micro service and its
// endpoints, unless the Service was stopped.
func (s *Service) startEndpoints() error {
	s.svcMu.Lock()
	defer s.svcMu.Unlock()
	if s.closed {
		return errStopped
	}
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        s.serve.Name,
		Version:     s.serve.Version,
		Description: "Bourse GPU compute exchange",
		QueueGroup:  "bourse-exchange",
	})
	if err != nil {
		return fmt.Errorf("natsvc: add micro service: %w", err)
	}
	s.svc = svc
	client := svc.AddGroup(protocol.Prefix + ".client")
	server := svc.AddGroup(protocol.Prefix + ".server")
	endpoints := []struct {
		g    micro.Group
		verb string
		h    micro.HandlerFunc
	}{
		{client, protocol.VerbOffer, s.async(s.handleOffer)},
		{client, protocol.VerbQuote, s.async(s.handleQuote)},
		{client, protocol.VerbCancel, s.handleCancel},
		{client, protocol.VerbWaiting, s.handleWaiting},
		{client, protocol.VerbServers, s.handleServers},
		{client, protocol.VerbSuspend, s.async(s.handleControl(contract.ReasonSuspended))},
		{client, protocol.VerbKill, s.async(s.handleControl(contract.ReasonKilled))},
		{client, protocol.VerbContract, s.handleContract},
		{client, protocol.VerbContracts, s.handleContracts},
		{client, protocol.VerbBalance, s.handleBalance},
		{client, protocol.VerbStatement, s.handleStatement},
		{client, protocol.VerbLogs, s.async(s.handleOutput(protocol.PartLog))},
		{client, protocol.VerbResults, s.async(s.handleOutput(protocol.PartResults))},
		{client, protocol.VerbFiles, s.async(s.handleFiles)},
		{server, protocol.VerbHello, s.handleHello},
		{server, protocol.VerbStarted, s.handleStarted},
		{server, protocol.VerbReceipts, s.async(s.handleReceipts)},
		{server, protocol.VerbFetch, s.async(s.handleFetch)},
	}
	for _, e := range endpoints {
		if err := e.g.AddEndpoint(e.verb, s.guard(e.h), micro.WithEndpointSubject("*."+e.verb)); err != nil {
			return fmt.Errorf("natsvc: add endpoint %s: %w", e.verb, err)
		}
	}
	// Make the subscriptions known to the server before Start returns, so
	// that a request sent right after Start finds a responder.
	if err := s.nc.Flush(); err != nil {
		return fmt.Errorf("natsvc: flush subscriptions: %w", err)
	}
	return nil
}

// startHeartbeats subscribes to every server's heartbeats: every instance
// hears each, so each can route, whether it serves requests now or not
// (serving.go).
func (s *Service) startHeartbeats() error {
	sub, err := s.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbHeartbeat), s.handleHeartbeat)
	if err != nil {
		return fmt.Errorf("natsvc: subscribe to heartbeats: %w", err)
	}
	s.subs = append(s.subs, sub)
	return nil
}

// async runs a slow handler off the subscription's goroutine, so that one
// negotiation does not hold up the next. MaxInFlight bounds them in all,
// Limits.InFlight for each client, so that a client whose negotiations
// hang (offers naming a server that never answers) uses up its own share
// and no one else's. The handler answers through a detached request:
// micro's own must not be used after its handler returns.
func (s *Service) async(h micro.HandlerFunc) micro.HandlerFunc {
	return func(r micro.Request) {
		_, party, _, _ := protocol.Sender(r.Subject()) // guard has checked it
		if err := s.checkDeadline(r); err != nil {
			s.refused.WithLabelValues("deadline").Inc()
			_ = natswire.RespondError(r, err)
			return
		}
		if !s.perParty.acquire(party) {
			s.refused.WithLabelValues("in_flight").Inc()
			// A slot frees when a negotiation ends, at most Negotiation on.
			wait := max(100*time.Millisecond, s.cfg.Negotiation/4)
			_ = natswire.RespondError(r, rateLimited(party, fmt.Sprintf("%d requests in negotiation already, the most one client may have", s.serve.Limits.InFlight), wait))
			return
		}
		select {
		case s.inflight <- struct{}{}:
		default:
			s.perParty.release(party)
			s.busy.Inc()
			_ = natswire.RespondError(r, errBusy)
			return
		}
		d := detached{Request: r, nc: s.nc, reply: r.Reply()}
		go func() {
			defer func() {
				<-s.inflight
				s.perParty.release(party)
			}()
			h(d)
		}()
	}
}

// checkDeadline refuses a request whose client stopped waiting before
// this instance took it up (protocol.DeadlineHeader), allowing for the
// clocks' skew (Config.ClockSkew). A request without the header, or with
// one that does not parse, is taken.
func (s *Service) checkDeadline(r micro.Request) error {
	v := r.Headers().Get(protocol.DeadlineHeader)
	if v == "" {
		return nil
	}
	dl, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return nil
	}
	if late := s.cfg.Now().Sub(dl); late > s.cfg.ClockSkew {
		return &bourse.Error{Code: bourse.EDeadlineExceeded, Field: protocol.DeadlineHeader,
			Message: fmt.Sprintf("the request's deadline passed %v before this exchange could take it up; nothing was done: retry with the same request id", late.Round(time.Millisecond))}
	}
	return nil
}

// detached answers a micro request by publishing to its reply subject
// itself. micro's statistics then count the request but not its errors or
// its time; the exchange's Prometheus metrics do.
type detached struct {
	micro.Request
	nc    *nats.Conn
	reply string
}

func (d detached) Respond(data []byte, _ ...micro.RespondOpt) error {
	if d.reply == "" {
		return nil
	}
	return d.nc.Publish(d.reply, data)
}

func (d detached) RespondJSON(v any, _ ...micro.RespondOpt) error {
	data, err := protocol.Marshal(v)
	if err != nil {
		return fmt.Errorf("natsvc: encode reply: %w", err)
	}
	return d.Respond(data)
}

func (d detached) Error(code, description string, data []byte, _ ...micro.RespondOpt) error {
	if d.reply == "" {
		return nil
	}
	m := nats.NewMsg(d.reply)
	m.Header.Set(micro.ErrorHeader, description)
	m.Header.Set(micro.ErrorCodeHeader, code)
	m.Data = data
	return d.nc.PublishMsg(m)
}
