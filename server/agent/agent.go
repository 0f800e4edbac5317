// Package agent is the GPU server's agent on NATS: it drives a
// server.Node, the server's admission and bookkeeping, from the exchange's
// requests, a ticker and its jobs, and carries out what the node asks —
// stopping and starting jobs, publishing readings to JetStream (through a
// disk outbox), saying hello and heartbeats. The rules are the node's;
// this package is the wires.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/outbox"
	"github.com/bourse/bourse/server/spool"
)

// DefaultShutdownTimeout is the zero value of Config.ShutdownTimeout.
const DefaultShutdownTimeout = 10 * time.Second

// Config configures an Agent. Its zero values work, except ID, Currency and
// GPUs, which name the server.
type Config struct {
	// URL is the NATS server to connect to, when Conn is nil.
	URL string
	// NATSOptions are added to the agent's own (credentials, TLS).
	NATSOptions []nats.Option
	// Conn is an existing connection to use instead. The agent neither
	// drains nor closes it, nor hears of its reconnects (so it says hello
	// only once); it should have been opened with
	// nats.CustomInboxPrefix(protocol.InboxPrefix(ID)).
	Conn *nats.Conn

	ID       string
	Currency currency.Currency // the prices it takes, and the scale of its charges
	GPUs     []contract.GPU
	Policy   server.Policy // nil: server.Posted{}, which takes any offer that fits
	Runner   server.Runner // nil: a server.Synthetic runner on Now

	// ReadingEvery and Heartbeat are used until the exchange's HelloReply
	// says otherwise; zero means server.DefaultEvery.
	ReadingEvery, Heartbeat time.Duration
	// ClaimFor is how long an accept claims its GPUs for the exchange's
	// start; zero means server.DefaultClaimFor.
	ClaimFor time.Duration
	// ShutdownTimeout bounds how long a stopping agent keeps trying to
	// publish its final readings; zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// OutboxDir is where readings wait on disk until JetStream has them,
	// and final readings until the exchange's receipt (package outbox),
	// so that they survive an outage of NATS, a loss of the usage stream
	// and a restart of the agent, which sends what its predecessor left.
	// Empty keeps them in memory only: a final reading without a receipt
	// by the end of ShutdownTimeout is lost.
	OutboxDir string
	// Output, if set, sends the output its jobs leave in their directories
	// under Output.Dir (the process runner's) to the exchange's output
	// stream, for their clients (package spool; the agent sets Send and
	// Logger).
	Output *spool.Config
	// OnFinal, if set, is called with each final reading as the agent is
	// about to publish it: the server's own record of what its jobs ran,
	// for its operator's books, and for tests that hold the exchange's
	// charges to it. It must not block.
	OnFinal func(contract.Reading)

	// Signer, if set, signs every usage reading (the Bourse-Sig header),
	// as exchanges that require signatures ask; signing.Signer is one.
	Signer interface {
		Sign(data []byte) (string, error)
	}

	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Agent is a GPU server's agent. Make one with New, then call Run once.
type Agent struct {
	cfg  Config
	id   string
	node *server.Node
	log  *slog.Logger
	now  func() time.Time

	nc *nats.Conn
	js jetstream.JetStream
	// outbox keeps readings until they are acknowledged; nil without
	// Config.OutboxDir. resendKick asks for a pass over it.
	outbox     *outbox.Outbox
	resendKick chan struct{}
	// held keeps the final readings the exchange has given no receipt
	// for (receipts.go); receipts says whether the exchange gives them
	// (receiptsGiven: its hello reply said so).
	held     held
	receipts atomic.Int32
	// spool sends the jobs' output; nil without Config.Output.
	spool *spool.Spool
	// runCtx outlives Run's ctx by the shutdown grace, so that the final
	// readings of stopped jobs still go out. startCtx ends when the
	// shutdown begins: a start under way (its files' fetch) gives up,
	// and starting counts those that go on in the background.
	runCtx     context.Context
	startCtx   context.Context
	stopStarts context.CancelFunc
	starting   atomic.Int32
	work       sync.WaitGroup // stops, launches and publications under way
	handlers   sync.WaitGroup // offers being decided
	ran        atomic.Bool
	// reconnected asks for a new hello; the agent's own connection
	// signals it, a Config.Conn does not.
	reconnected chan struct{}
	// stopped tells the ticker to tick now: a job's stop is done.
	tickKick chan struct{}
	// changes asks for a heartbeat soon: the node's ask changed.
	// repaced says that the exchange set a new heartbeat interval
	// (pace.go).
	changes chan struct{}
	repaced chan struct{}
	// batch are the readings waiting for the next readings message
	// (send); batchTimer, if set, flushes them at batchDue.
	batchMu    sync.Mutex
	batch      []contract.Reading
	batchTimer *time.Timer
	batchDue   time.Time
	// readingsMsgs says that the exchange's usage stream takes readings
	// messages (its hello reply said so); noResponders, in Unix
	// nanoseconds, when one found nothing to take it (aloneAfterNoResponders).
	readingsMsgs atomic.Bool
	noResponders atomic.Int64

	mu        sync.Mutex
	heartbeat time.Duration
	// changeGap is the least time between heartbeats that changes bring
	// about, as the exchange's hello reply said (pace.go); 0 from an
	// exchange older than it: a tenth of heartbeat.
	changeGap time.Duration
	closing   bool
	// status is what /metrics and /readyz read of the agent from
	// another goroutine (metrics.go).
	status status

	// bookMu orders the saves of the bookings; savedGen is the node's
	// generation of them last saved.
	bookMu   sync.Mutex
	savedGen uint64
	// learnMu orders the saves of a learning policy's state; learnSaved
	// is its epoch last saved (learning.go).
	learnMu    sync.Mutex
	learnSaved int
}

// New checks cfg and fills in its defaults.
func New(cfg Config) (*Agent, error) {
	if cfg.Conn == nil && cfg.URL == "" {
		cfg.URL = nats.DefaultURL
	}
	if cfg.Runner == nil {
		// On the wall clock the synthetic runner ends jobs by timers, so
		// that their ends are reported at once.
		cfg.Runner = &server.Synthetic{Now: cfg.Now}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Heartbeat = orDefault(cfg.Heartbeat, server.DefaultEvery)
	cfg.ShutdownTimeout = orDefault(cfg.ShutdownTimeout, DefaultShutdownTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Agent{
		cfg:         cfg,
		id:          cfg.ID,
		log:         cfg.Logger.With("server", cfg.ID),
		now:         cfg.Now,
		heartbeat:   cfg.Heartbeat,
		reconnected: make(chan struct{}, 1),
		resendKick:  make(chan struct{}, 1),
		tickKick:    make(chan struct{}, 1),
		changes:     make(chan struct{}, 1),
		repaced:     make(chan struct{}, 1),
	}
	// The agent fetches its jobs' files for the runner, from the exchange.
	node, err := server.NewNode(server.NodeConfig{ID: cfg.ID, Currency: cfg.Currency, GPUs: cfg.GPUs, Policy: cfg.Policy,
		Runner: cfg.Runner, ReadingEvery: cfg.ReadingEvery, ClaimFor: cfg.ClaimFor, Files: a, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	a.node = node
	return a, nil
}

// Node is the server's admission and bookkeeping, which the agent drives.
func (a *Agent) Node() *server.Node { return a.node }

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Run connects, registers with the exchange, takes offers and runs jobs
// until ctx is cancelled; then it stops taking offers, stops its jobs with
// reason shutdown, publishes their final readings and drains the
// connection. It returns nil after such a clean stop, and an error when it
// cannot connect or the exchange refuses it.
func (a *Agent) Run(ctx context.Context) error {
	if !a.ran.CompareAndSwap(false, true) {
		return bourse.Errorf(bourse.EInvalid, "agent.Run", "Run was called already")
	}
	if a.cfg.OutboxDir != "" {
		ob, err := outbox.Open(outbox.Config{Dir: a.cfg.OutboxDir, Logger: a.log})
		if err != nil {
			return fmt.Errorf("server %s: %w", a.id, err)
		}
		defer func() {
			if err := ob.Close(); err != nil {
				a.log.Error("close the outbox", "err", err)
			}
		}()
		if n := ob.Len(); n > 0 {
			a.log.Info("readings left unsent by the last run; sending them", "readings", n)
		}
		a.outbox = ob
		a.status.outbox.Store(ob)
		for _, rd := range ob.Pending() {
			if rd.Final {
				// Its receipt never came: ask about it as soon as the
				// exchange says it gives receipts.
				a.held.add(rd, time.Now(), 0) //wallclock: pacing: ask at once
			}
		}
		if err := a.restoreBookings(); err != nil {
			return err
		}
		if err := a.restoreLearning(); err != nil {
			return err
		}
		// What the last epoch taught is kept however the run ends.
		defer a.saveLearning(true)
	}
	if err := a.openSpool(); err != nil {
		return fmt.Errorf("server %s: %w", a.id, err)
	}
	if a.spool != nil {
		defer func() {
			if err := a.spool.Close(); err != nil {
				a.log.Error("close the spool", "err", err)
			}
		}()
	}
	closed, err := a.connect()
	if err != nil {
		return err
	}
	runCtx, cancelRun := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRun()
	a.runCtx = runCtx
	a.startCtx, a.stopStarts = context.WithCancel(runCtx)
	defer a.stopStarts()
	resendCtx, stopResend := context.WithCancel(runCtx)
	resent := make(chan struct{})
	go func() { defer close(resent); a.resend(resendCtx) }()
	spoolCtx, stopSpool := context.WithCancel(runCtx)
	spooled := make(chan struct{})
	go func() {
		defer close(spooled)
		if a.spool != nil {
			a.runSpool(spoolCtx)
		}
	}()
	tickCtx, stopTicks := context.WithCancel(runCtx)
	ticked := make(chan struct{})
	go func() { defer close(ticked); a.ticks(tickCtx) }()
	confirmCtx, stopConfirm := context.WithCancel(runCtx)
	confirmed := make(chan struct{})
	go func() { defer close(confirmed); a.confirm(confirmCtx) }()
	receipts, err := a.subscribeReceipts()
	var subs []*nats.Subscription
	if err == nil {
		subs, err = a.subscribe()
	}
	if err == nil {
		err = a.hello(ctx)
	}
	if err == nil {
		a.beat(ctx)
	}
	a.shutdown(subs, cancelRun)
	stopTicks()
	<-ticked
	stopConfirm()
	<-confirmed
	if receipts != nil {
		_ = receipts.Unsubscribe()
	}
	stopResend()
	<-resent
	stopSpool()
	<-spooled
	if a.cfg.Conn == nil {
		if derr := a.nc.Drain(); derr != nil {
			a.log.Warn("drain", "err", derr)
			a.nc.Close()
		}
		select {
		case <-closed:
		case <-time.After(a.cfg.ShutdownTimeout): //wallclock: pacing: how long a shutdown waits, in real time
			a.nc.Close()
		}
	}
	return err
}

func (a *Agent) connect() (closed chan struct{}, err error) {
	closed = make(chan struct{})
	var js jetstream.JetStream
	if a.cfg.Conn != nil {
		a.nc = a.cfg.Conn
		if err := protocol.CheckInbox(a.nc.NewRespInbox(), a.id); err != nil {
			return nil, fmt.Errorf("agent: %w", err)
		}
	} else {
		opts := append([]nats.Option{
			nats.Name("bourse server " + a.id),
			nats.CustomInboxPrefix(protocol.InboxPrefix(a.id)),
			nats.MaxReconnects(-1),
			// Back soon after NATS is: its hello, heartbeats and readings
			// wait on it (nats.go's default is 2 s between tries); the
			// jitter spreads the agents that all lost the same server.
			nats.ReconnectWait(250 * time.Millisecond), nats.ReconnectJitter(500*time.Millisecond, time.Second),
			// A server agent may start before NATS does.
			nats.RetryOnFailedConnect(true),
			nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
				if err != nil {
					a.log.Warn("disconnected from NATS", "err", err)
				}
			}),
			nats.ReconnectHandler(func(nc *nats.Conn) {
				a.log.Info("reconnected to NATS", "url", nc.ConnectedUrl())
				select {
				case a.reconnected <- struct{}{}:
				default: // a hello is due already
				}
				a.kickResend()
			}),
			nats.ClosedHandler(func(*nats.Conn) { close(closed) }),
			// Asynchronous errors (a permissions violation, a slow
			// subscription) go to the log, not to stderr.
			nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
				subject := ""
				if sub != nil {
					subject = sub.Subject
				}
				a.log.Error("NATS", "subject", subject, "err", err)
			}),
		}, a.cfg.NATSOptions...)
		if a.nc, err = nats.Connect(a.cfg.URL, opts...); err != nil {
			return nil, fmt.Errorf("server %s: connect to %s: %w", a.id, a.cfg.URL, err)
		}
	}
	if js, err = jetstream.New(a.nc); err != nil {
		return nil, fmt.Errorf("server %s: jetstream: %w", a.id, err)
	}
	a.js = js
	a.status.conn.Store(a.nc)
	return closed, nil
}

// concurrently runs h on its own goroutine, at most maxOffersInFlight at
// once; beyond that the subscription's goroutine waits, which is NATS's
// own back-pressure.
func (a *Agent) concurrently(h nats.MsgHandler) nats.MsgHandler {
	sem := make(chan struct{}, maxOffersInFlight)
	return func(m *nats.Msg) {
		sem <- struct{}{}
		a.handlers.Add(1)
		go func() {
			defer func() { <-sem; a.handlers.Done() }()
			h(m)
		}()
	}
}

const maxOffersInFlight = 64

// subscribe listens before the hello, so that the first offer the exchange
// routes after registering finds the agent.
func (a *Agent) subscribe() ([]*nats.Subscription, error) {
	handlers := []struct {
		verb string
		h    nats.MsgHandler
	}{
		// Offers are decided concurrently: decoding and validating them is
		// most of the work, and only the decision itself takes the node's lock. Starts
		// stay in order, so that a repeated start cannot start a job twice.
		{protocol.DeliverOffer, a.concurrently(a.onOffer)},
		{protocol.DeliverQuote, a.concurrently(a.onQuote)},
		{protocol.DeliverStart, a.onStart},
		{protocol.DeliverCancel, a.onCancel},
		{protocol.DeliverControl, a.onControl},
		{protocol.DeliverPace, a.onPace},
	}
	var subs []*nats.Subscription
	for _, h := range handlers {
		sub, err := a.nc.Subscribe(protocol.DeliverSubject(a.id, h.verb), h.h)
		if err != nil {
			return subs, fmt.Errorf("server %s: subscribe to %s: %w", a.id, h.verb, err)
		}
		subs = append(subs, sub)
	}
	return subs, nil
}

// shutdown stops taking offers, stops every job with reason shutdown and
// waits for their final readings, for at most ShutdownTimeout.
func (a *Agent) shutdown(subs []*nats.Subscription, cancelRun context.CancelFunc) {
	a.mu.Lock()
	a.closing = true
	a.mu.Unlock()
	for _, s := range subs {
		if err := s.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			a.log.Warn("unsubscribe", "subject", s.Subject, "err", err)
		}
	}
	a.handlers.Wait() // offers decided meanwhile were refused: the node is closed
	a.node.Close()
	a.stopStarts()
	grace := time.AfterFunc(a.cfg.ShutdownTimeout, cancelRun) //wallclock: pacing: how long a shutdown waits, in real time
	defer grace.Stop()
	// A start in the background ends soon (its fetch gives up); a job it
	// launched meanwhile is stopped here with the others.
	for (a.node.Running() > 0 || a.starting.Load() > 0) && a.runCtx.Err() == nil {
		a.tick()
		select {
		case <-a.runCtx.Done():
		case <-a.tickKick:
		case <-time.After(tickEvery): //wallclock: pacing: wakes the loop; what is due is read on the clock
		}
	}
	a.flushSoon() // readings that wait for an interval's others go now
	a.work.Wait()
	a.awaitReceipts(a.runCtx)
}
