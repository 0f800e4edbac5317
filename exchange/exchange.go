// Package exchange is the clearinghouse between clients and GPU servers, a
// NATS service: it validates offers, routes them to matching servers,
// escrows the prepayment of the accepted one, follows the contract through
// its usage readings and settles it. Instances are stateless: several in one
// queue group share one Store.
package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// Config configures a Service. Conn and Store are required; every other zero
// value takes the default in its comment.
type Config struct {
	Conn  *nats.Conn
	Store Store

	Name    string // micro service name, "bourse-exchange"
	Version string // micro service version, "0.1.0"

	Negotiation     time.Duration // how long servers have to answer an offer, 2s
	StartTimeout    time.Duration // accepted contracts not started by then are voided, 15s
	ReadingEvery    time.Duration // how often servers publish readings, 1s
	Heartbeat       time.Duration // how often servers publish heartbeats, 1s
	ServerLostAfter time.Duration // silence after which a contract is settled as lost, 10s
	WatchdogEvery   time.Duration // 1s
	// SweepBatch is how many contracts, and due holds, one watchdog sweep
	// looks at, 500.
	SweepBatch  int
	MaxInFlight int // offers negotiated at once before "unavailable", 4096
	// MaxBookAhead is how far ahead an offer's start_at may be, 30 days.
	MaxBookAhead time.Duration
	// ClockSkew is how far a server's clock, and the time its messages
	// take, may put a reading off the exchange's own clock, 5s: a
	// reading's T may exceed the time since the contract could have
	// started by this much, and its "at" be this far ahead (usage.go,
	// believable).
	ClockSkew time.Duration
	// AckWait is how long the usage stream waits for an instance to
	// acknowledge a reading before it hands it out again,
	// (ServerLostAfter − ReadingEvery)/2. It must be shorter than
	// ServerLostAfter − ReadingEvery, so that a reading stranded on an
	// instance that died comes back before any watchdog could judge its
	// server lost.
	AckWait time.Duration
	// StuckLimit is how long a contract may keep failing to settle or
	// void before the watchdog ends it by the fixed rule: settled on its
	// last valid reading, else voided (ReasonExpired), 1h.
	StuckLimit time.Duration

	// StreamStorage is where JetStream keeps readings: file (default) or
	// memory (the demo).
	StreamStorage  jetstream.StorageType
	StreamReplicas int // 1; 3 on a NATS cluster

	Logger  *slog.Logger
	Metrics prometheus.Registerer // nil: metrics are kept but not registered
	Now     func() time.Time
}

func (c *Config) defaults() error {
	if c.Conn == nil || c.Store == nil {
		return errors.New("exchange: Config.Conn and Config.Store are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Negotiation, 2*time.Second)
	def(&c.StartTimeout, 15*time.Second)
	def(&c.ReadingEvery, time.Second)
	def(&c.Heartbeat, time.Second)
	def(&c.ServerLostAfter, 10*time.Second)
	def(&c.WatchdogEvery, time.Second)
	def(&c.MaxBookAhead, 30*24*time.Hour)
	def(&c.ClockSkew, 5*time.Second)
	def(&c.StuckLimit, time.Hour)
	if c.ServerLostAfter <= c.ReadingEvery {
		return fmt.Errorf("exchange: ServerLostAfter %v must be longer than ReadingEvery %v", c.ServerLostAfter, c.ReadingEvery)
	}
	def(&c.AckWait, (c.ServerLostAfter-c.ReadingEvery)/2)
	if c.AckWait >= c.ServerLostAfter-c.ReadingEvery {
		return fmt.Errorf("exchange: AckWait %v must be shorter than ServerLostAfter %v less ReadingEvery %v", c.AckWait, c.ServerLostAfter, c.ReadingEvery)
	}
	if c.Name == "" {
		c.Name = "bourse-exchange"
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if c.SweepBatch <= 0 {
		c.SweepBatch = 500
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 4096
	}
	if c.StreamReplicas <= 0 {
		c.StreamReplicas = 1
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Service is a running exchange instance.
type Service struct {
	cfg      Config
	nc       *nats.Conn
	store    Store
	log      *slog.Logger
	metrics  *metrics
	servers  *registry
	scales   sync.Map // currency code → int32 scale; currencies never change scale
	inflight chan struct{}
	starts   sync.WaitGroup // start requests sent after their offer's answer

	// The watchdog's: when it last saw NATS unreachable or itself not
	// running (the instance's start counts), when it last swept, and
	// when it last counted the stuck contracts.
	outage, lastSweep, lastStuckCount time.Time
	// retryHold spaces out attempts to end contracts whose hold is due,
	// for contracts the store has no Stuck.Retry for (a hold without a
	// contract). The watchdog's goroutine alone uses it.
	retryHold map[currency.HoldID]time.Time

	svc      micro.Service
	subs     []*nats.Subscription
	consumer jetstream.ConsumeContext
	readers  sync.WaitGroup // the reading workers
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// Start validates cfg, creates the usage stream if needed and starts
// serving. Stop it with Stop.
func Start(ctx context.Context, cfg Config) (*Service, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	s := &Service{
		cfg: cfg, nc: cfg.Conn, store: cfg.Store, log: cfg.Logger,
		metrics:  newMetrics(cfg.Metrics),
		servers:  newRegistry(cfg.Now, cfg.ServerLostAfter),
		inflight: make(chan struct{}, cfg.MaxInFlight),
		// A new instance has heard nothing yet: readings may wait in the
		// stream, some for AckWait. Its start is an outage to the watchdog.
		outage: cfg.Now().UTC(), lastSweep: cfg.Now().UTC(),
		retryHold: map[currency.HoldID]time.Time{},
	}
	runCtx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if err := s.startUsage(ctx, runCtx); err != nil {
		cancel()
		return nil, err
	}
	if err := s.startEndpoints(); err != nil {
		s.Stop()
		return nil, err
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchdog(runCtx)
	}()
	return s, nil
}

// Stop stops taking requests, lets handlers in flight finish, and stops the
// usage consumer and the watchdog. Unacknowledged readings are redelivered
// to another instance.
func (s *Service) Stop() {
	if s.svc != nil {
		_ = s.svc.Stop()
	}
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	if s.consumer != nil {
		s.consumer.Stop()
	}
	for range cap(s.inflight) { // wait for offers in negotiation
		s.inflight <- struct{}{}
	}
	s.starts.Wait()
	s.cancel()
	s.wg.Wait()
	s.readers.Wait()
}

func (s *Service) startEndpoints() error {
	svc, err := micro.AddService(s.nc, micro.Config{
		Name:        s.cfg.Name,
		Version:     s.cfg.Version,
		Description: "Bourse GPU compute exchange",
		QueueGroup:  "bourse-exchange",
	})
	if err != nil {
		return fmt.Errorf("exchange: add micro service: %w", err)
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
		{client, protocol.VerbSuspend, s.async(s.handleControl(trade.ReasonSuspended))},
		{client, protocol.VerbKill, s.async(s.handleControl(trade.ReasonKilled))},
		{client, protocol.VerbContract, s.handleContract},
		{client, protocol.VerbContracts, s.handleContracts},
		{client, protocol.VerbBalance, s.handleBalance},
		{client, protocol.VerbStatement, s.handleStatement},
		{server, protocol.VerbHello, s.handleHello},
		{server, protocol.VerbStarted, s.handleStarted},
	}
	for _, e := range endpoints {
		if err := e.g.AddEndpoint(e.verb, e.h, micro.WithEndpointSubject("*."+e.verb)); err != nil {
			return fmt.Errorf("exchange: add endpoint %s: %w", e.verb, err)
		}
	}
	// Every instance hears every heartbeat, so each can route.
	sub, err := s.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbHeartbeat), s.handleHeartbeat)
	if err != nil {
		return fmt.Errorf("exchange: subscribe to heartbeats: %w", err)
	}
	s.subs = append(s.subs, sub)
	// Make the subscriptions known to the server before Start returns, so
	// that a request sent right after Start finds a responder.
	if err := s.nc.Flush(); err != nil {
		return fmt.Errorf("exchange: flush subscriptions: %w", err)
	}
	return nil
}

// async runs a slow handler off the subscription's goroutine, so that one
// negotiation does not hold up the next; MaxInFlight bounds them. The
// handler answers through a detached request: micro's own must not be used
// after its handler returns.
func (s *Service) async(h micro.HandlerFunc) micro.HandlerFunc {
	return func(r micro.Request) {
		select {
		case s.inflight <- struct{}{}:
		default:
			s.metrics.busy.Inc()
			_ = natswire.RespondError(r, errBusy)
			return
		}
		d := detached{Request: r, nc: s.nc, reply: r.Reply()}
		go func() {
			defer func() { <-s.inflight }()
			h(d)
		}()
	}
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
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("exchange: encode reply: %w", err)
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

// LiveServers counts the servers this instance has heard from recently.
func (s *Service) LiveServers() int { return s.servers.live() }
