// Package exchange is the clearinghouse between clients and GPU servers:
// the market's rules, without NATS, goroutines or the wall clock. A House
// validates offers, routes them to matching servers through a Router,
// escrows the prepayment of the accepted one, follows the contract through
// its usage readings, settles it, and sweeps for contracts that can no
// longer end by themselves. Every contract's change of state happens in
// one store transaction with the money it moves.
//
// exchange/natsvc serves a House over NATS; the simulator drives one in
// process on a virtual clock. Both pass the same Store and the same rules.
package exchange

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
)

// Verifier checks that sig is server's own signature of data.
type Verifier interface {
	Verify(server string, data []byte, sig string) error
}

// DefaultStopGrace is Config.StopGrace's default: a server's own grace
// from SIGTERM to SIGKILL (runner.grace) must be shorter, by a few
// seconds for the final reading's travel.
const DefaultStopGrace = 15 * time.Second

// Config configures a House. Store, Router and Notifier are required;
// every other zero value takes the default in its comment.
type Config struct {
	Store    Store
	Router   Router
	Notifier Notifier

	Negotiation time.Duration // how long servers have to answer an offer, 2s
	// RouteTo is how many servers an offer goes to at most, 8
	// (DefaultRouteTo): those with room whose asks it meets, cheapest
	// first (route.go).
	RouteTo      int
	StartTimeout time.Duration // accepted contracts not started by then are voided, 15s
	// PrepareTimeout is how long a server may prepare a job before it
	// starts it (pull its container image) when it answers the start
	// Preparing: the start deadline moves out to then, 10m. A job with an
	// image escrows its prepayment that much longer.
	PrepareTimeout time.Duration
	ReadingEvery   time.Duration // how often servers publish readings, 1s
	// Heartbeat is how often servers publish heartbeats at most while
	// nothing changes, 1s; HeartbeatsPerSecond, where set, how many a
	// second the servers' steady heartbeats come to in all at most: the
	// interval grows with the fleet, in whole multiples of Heartbeat
	// (pace.go). 0 (the simulator) keeps Heartbeat; natsvc's default is
	// 100.
	Heartbeat           time.Duration
	HeartbeatsPerSecond int
	ServerLostAfter     time.Duration // silence after which a contract is settled as lost, 10s
	// SweepEvery is how often the House's driver calls Sweep, 1s: a sweep
	// that comes much later than that tells the House it was not running.
	SweepEvery time.Duration
	// SweepBatch is how many contracts, and due holds, one sweep looks
	// at, 500.
	SweepBatch int
	// MaxBookAhead is how far ahead an offer's start_at may be, 30 days.
	MaxBookAhead time.Duration
	// ClockSkew is how far a server's clock, and the time its messages
	// take, may put a reading off the House's own clock, 5s: a reading's
	// T may exceed the time since the contract could have started by this
	// much, and its "at" be this far ahead (reading.go, believable).
	ClockSkew time.Duration
	// AckWait is how long a reading handed to one instance may go
	// unacknowledged before the stream hands it to another,
	// (ServerLostAfter − ReadingEvery)/2. It must be shorter than
	// ServerLostAfter − ReadingEvery, so that a reading stranded on an
	// instance that died comes back before any sweep could judge its
	// server lost. The House only checks it; its driver uses it.
	AckWait time.Duration
	// StopGrace is how long after a client's kill or suspend of a
	// running contract the exchange goes on believing its server, 15s:
	// the job's stop (the process runner's 10 s from SIGTERM to SIGKILL)
	// and its final reading's travel. Then the contract settles on its
	// last reading, whatever its server says, and no reading counts time
	// past it (contract.Stop).
	StopGrace time.Duration
	// StuckLimit is how long a contract may keep failing to settle or
	// void before a sweep ends it by the fixed rule: settled on its last
	// valid reading, else voided (ReasonExpired), 1h.
	StuckLimit time.Duration

	// MarketWindow is how far back market data counts the contracts
	// settled, 1h; MarketEvery how often its driver publishes it, 5s;
	// MarketTape the most contracts it keeps in memory to do so, 100,000
	// (past that the window it covers shortens, and says so).
	MarketWindow time.Duration
	MarketEvery  time.Duration
	MarketTape   int

	// BookPerClient bounds one client's waiting offers, 16; BookTotal
	// the book's, 10,000 (Store.Queue refuses more with book_full).
	BookPerClient int
	BookTotal     int
	// MatchBatch is how many waiting offers of a currency one matching
	// pass negotiates at most, 100, and MatchScan how many it reads at
	// most, 1,000 (offers that no server with room would take are read
	// and passed over); a pass that stops there with room left goes on
	// at the next (match.go). RematchEvery is how often every server
	// with free GPUs is matched again, whether or not they freed lately,
	// and how long a server's refusal of a waiting offer stands while it
	// has no more GPUs free, 30s (its prices may have fallen, or the
	// instance that matched stopped). MatchGap is the least time between
	// two passes of a currency that heartbeats, not a contract's end,
	// make due, 1s: a server cannot make the exchange offer it the book
	// more often (pass.go).
	MatchBatch   int
	MatchScan    int
	RematchEvery time.Duration
	MatchGap     time.Duration

	Logger  *slog.Logger          // slog.Default() if nil
	Metrics prometheus.Registerer // nil: metrics are kept but not registered
	// Instance names this House among the instances that share its
	// store, and ShareHearing has it record there what it hears its
	// servers say (Store.Hear), and weigh what the others heard before
	// its sweep judges a contract's silence (hearing.go). A driver of
	// several instances on one store (natsvc) sets both; the simulator,
	// alone on its store, neither.
	Instance     string
	ShareHearing bool
	// KeepRecords has the sweep read, every 30 s, each server's record
	// of the contracts it accepted in the last RecordWindow (1h): how
	// many it started, never started, lost (record.go). A server that
	// left more than half of its accepts unstarted is routed no offer
	// but one naming it, and matched no waiting offer. natsvc keeps
	// them; the simulator does not. The record holds too the canary
	// audits judged in the last CanaryWindow (a week): a server whose
	// canaries demote it (protocol.Canaries.Demotes) is demoted alike.
	KeepRecords  bool
	RecordWindow time.Duration
	CanaryWindow time.Duration
	// Backlog, if set, says whether readings from a server have reached
	// the exchange's transport but not its store: the sweep does not take
	// a contract's silence for its server's loss while its server's
	// readings wait there (sweep.go). nil where readings are stored as
	// they are sent (the simulator).
	Backlog Backlog
	// Files, if set, keeps clients' files for their contracts' servers
	// (files.go); nil refuses offers with files. FilesRate is the least
	// rate, in bytes a second, at which a server fetches them, which
	// lengthens a contract's time to start by its files' size over it,
	// DefaultFilesRate.
	Files     Files
	FilesRate int64
	// Verifier, if set, requires every reading that travels (Reading) to
	// carry its server's signature, and keeps it on the contract; nil
	// takes readings on NATS's word alone (signing.Keys is one).
	Verifier Verifier
	// SpendCaps, if set, gives the spend caps (per hour, day or month,
	// and spend rates) that admission enforces (package caps); nil for
	// none. Concurrent-GPU caps need no source: they are the ledger's.
	SpendCaps caps.Limits
	// Periods decides which period of a spend cap is under way (package
	// caps: the budget an offer reserves from); a Periods on Now if nil.
	// The treasury of the same process shares it.
	Periods *caps.Periods
	// Now is the House's clock: its Periods' if nil and Periods is set,
	// else time.Now.
	Now func() time.Time
	// Sleep waits d on the House's clock, or until ctx ends: a try
	// waits so for another try of its request (lock.go). A timer on
	// the wall clock if nil; give a manual clock's (clocktest.Clock's
	// Sleep moves it on), or a try waiting on that clock never gives up.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (c *Config) defaults() error {
	if c.Store == nil || c.Router == nil || c.Notifier == nil {
		return errors.New("exchange: Config.Store, Router and Notifier are required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Negotiation, 2*time.Second)
	if c.RouteTo <= 0 {
		c.RouteTo = DefaultRouteTo
	}
	def(&c.StartTimeout, 15*time.Second)
	def(&c.PrepareTimeout, 10*time.Minute)
	def(&c.RecordWindow, time.Hour)
	def(&c.CanaryWindow, DefaultCanaryWindow)
	def(&c.ReadingEvery, time.Second)
	def(&c.Heartbeat, time.Second)
	def(&c.ServerLostAfter, 10*time.Second)
	def(&c.SweepEvery, time.Second)
	def(&c.MaxBookAhead, 30*24*time.Hour)
	def(&c.ClockSkew, 5*time.Second)
	def(&c.StuckLimit, time.Hour)
	def(&c.StopGrace, DefaultStopGrace)
	if c.ServerLostAfter <= c.ReadingEvery {
		return fmt.Errorf("exchange: ServerLostAfter %v must be longer than ReadingEvery %v", c.ServerLostAfter, c.ReadingEvery)
	}
	def(&c.AckWait, (c.ServerLostAfter-c.ReadingEvery)/2)
	if c.AckWait >= c.ServerLostAfter-c.ReadingEvery {
		return fmt.Errorf("exchange: AckWait %v must be shorter than ServerLostAfter %v less ReadingEvery %v", c.AckWait, c.ServerLostAfter, c.ReadingEvery)
	}
	c.marketDefaults()
	c.bookDefaults()
	if c.SweepBatch <= 0 {
		c.SweepBatch = 500
	}
	if c.FilesRate <= 0 {
		c.FilesRate = DefaultFilesRate
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil && c.Periods != nil {
		c.Now = c.Periods.Now
	}
	if c.Now == nil {
		c.Now = time.Now //wallclock: the default of Config.Now, for a House on the wall clock
	}
	if c.Sleep == nil {
		c.Sleep = wallSleep
	}
	if c.Periods == nil {
		c.Periods = caps.NewPeriods(c.Now)
	}
	return nil
}

// House is the exchange's rules over a Store. It is safe for concurrent
// use, and it calls its Router and Notifier holding no lock of its own, so
// that they may call back into it.
type House struct {
	cfg     Config
	store   Store
	router  Router
	notify  Notifier
	log     *slog.Logger
	metrics *metrics
	servers *registry
	scales  sync.Map // currency code → int32 scale; currencies never change scale
	parents sync.Map // wallet ID → []string, the owners above it (owners)

	// The sweep's own state (Sweep is called by one caller at a time):
	// when it last saw the House cut off or not running (its start
	// counts) and when it last swept, and when it last counted the stuck
	// contracts.
	sweepMu      sync.Mutex
	pauses       pauses
	stuckCounted time.Time
	// retryHold spaces out attempts to end contracts whose hold is due,
	// for contracts the store has no Stuck.Retry for (a hold without a
	// contract).
	retryHold map[currency.HoldID]time.Time
	// told is when the sweep last recorded what this instance hears
	// (hearing.go), recorded when it last read the servers' records
	// (record.go).
	told, recorded time.Time

	// token and negotiations name the House's negotiations (offerID).
	token        string
	negotiations atomic.Uint64

	tape     tape     // the contracts settled lately, for market data (tape.go)
	room     rooms    // the servers that may have room for waiting offers (pass.go)
	refusals refusals // the servers' refusals of waiting offers (refusal.go)
}

// New checks cfg and returns a House.
func New(cfg Config) (*House, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	now := cfg.Now().UTC()
	return &House{
		cfg: cfg, store: cfg.Store, router: cfg.Router, notify: cfg.Notifier, log: cfg.Logger,
		metrics: newMetrics(cfg.Metrics),
		servers: newRegistry(cfg.Now, pacing(cfg)),
		// A new House has heard nothing yet: readings may wait in the
		// stream, some for AckWait. Its start is an outage to the sweep.
		pauses:    pauses{outage: now, last: now},
		retryHold: map[currency.HoldID]time.Time{},
		token:     newToken(),
	}, nil
}

// instance is the House's name among the instances on its store.
func (h *House) instance() string { return cmp.Or(h.cfg.Instance, h.token) }

// Config returns the House's configuration, defaults filled in.
func (h *House) Config() Config { return h.cfg }

// LiveServers counts the servers this House has heard from recently.
func (h *House) LiveServers() int { return h.servers.live() }

// wallSleep is Config.Sleep's default: real time, for a House on the
// wall clock.
func wallSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d) //wallclock: the default of Config.Sleep, for a House on the wall clock
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
