package sim

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim/workload"
)

// Config is a market to simulate: a scenario's servers and clients, and
// the workload they trade. Servers and Workload are required.
type Config struct {
	// Scenario and Policy name the run in its Result.
	Scenario, Policy string
	Servers          []scenario.ServerSpec
	// Clients are the clients the scenario describes. A job whose client
	// is not among them is submitted by a client made from Default under
	// the job's client id (a trace's users); without Default it is an
	// error.
	Clients []scenario.ClientSpec
	Default *scenario.ClientSpec
	// Workload streams the jobs, in order of arrival.
	Workload workload.Source
	Seed     uint64
	// Start is the virtual time the market opens, 2026-01-01 UTC if zero.
	Start time.Time
	// Horizon, if set, is when arrivals stop being submitted; the market
	// then runs on until every job has ended or given up.
	Horizon time.Duration
	// Limit is the virtual time after which the run stops whatever is
	// still under way (counted as not completed), Horizon + 30 days or a
	// year if zero.
	Limit time.Duration
	// Sample is the series' interval, an hour if zero.
	Sample time.Duration
	// ReadingEvery is how often servers send readings, heartbeats and the
	// House sweeps, a minute if zero: jobs end at their exact time
	// whatever it is, so it only sets how much work the run does.
	ReadingEvery time.Duration
	// Exchange tunes the House; its Store, Router, Notifier and Now are
	// the simulation's, and its intervals follow ReadingEvery unless set.
	Exchange exchange.Config
	// Log, if set, gets one JSON line per contract event, in order: the
	// contract log, the same bytes for the same Config.
	Log io.Writer
	// KeepFinals keeps every job's final reading as its server made it,
	// for Final: a test checks each charge against what ran. It costs
	// memory for every contract of the run.
	KeepFinals bool
	// Forget, if positive, is how long ended contracts and the ledger's
	// finished movements are kept: older ones are forgotten (the store's
	// Forget, the ledger's Compact) every Forget/2, so that a run of ten
	// million jobs holds memory for those live or recently ended, not for
	// every one. Contracts then lists only what is kept; the audit still
	// balances. Zero keeps everything, which tests that check every
	// contract's charge need. Clients with allowances need their wallets'
	// whole statements: a run with any keeps everything.
	Forget time.Duration
	// Progress, if set, is told every ProgressEvery jobs how many have
	// arrived so far.
	Progress func(jobs int)
	// TrackEvery, if positive, notes the run's takings every TrackEvery
	// arrivals (Result.Track), before the job arrives: the offers made
	// and the revenue settled by then.
	TrackEvery int
	// Poll runs the servers as their agents do over NATS: every server
	// ticks every ReadingEvery, sending its heartbeat and a reading of
	// each running contract, and the House's sweep judges silence
	// after 3 × ReadingEvery. Without it (the default) a server speaks
	// only when its state changes, sends no reading but the final one
	// (the synthetic meter's use is known between events), and is never
	// judged lost, since nothing in a simulation fails: the run costs
	// what its events cost, not servers × virtual time. Both give the
	// same results and contract log (TestEventsAsPolling); Poll is for
	// that comparison.
	Poll bool
	// Standing makes a job whose negotiation ends without a contract wait
	// in the House's book (an offer with a wait, standing.go) rather than
	// in its client's queue, offering again whenever a server frees up.
	Standing bool
}

// ProgressEvery is how many arrivals pass between Progress calls.
const ProgressEvery = 1000

func (c *Config) defaults() error {
	if len(c.Servers) == 0 {
		return fmt.Errorf("sim: a market needs servers")
	}
	if c.Workload == nil {
		return fmt.Errorf("sim: a market needs a workload")
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Limit <= 0 {
		c.Limit = 365 * 24 * time.Hour
		if c.Horizon > 0 {
			c.Limit = c.Horizon + 30*24*time.Hour
		}
	}
	if c.Sample <= 0 {
		c.Sample = time.Hour
	}
	if c.ReadingEvery <= 0 {
		c.ReadingEvery = time.Minute
	}
	if c.Default != nil && c.Default.Allowance != nil || slices.ContainsFunc(c.Clients, func(s scenario.ClientSpec) bool { return s.Allowance != nil }) {
		c.Forget = 0
	}
	x := &c.Exchange
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&x.ReadingEvery, c.ReadingEvery)
	def(&x.Heartbeat, c.ReadingEvery)
	def(&x.SweepEvery, c.ReadingEvery)
	if c.Poll {
		def(&x.ServerLostAfter, 3*c.ReadingEvery)
	} else {
		def(&x.ServerLostAfter, c.silence())
	}
	def(&x.StuckLimit, max(time.Hour, 10*c.ReadingEvery))
	// A simulated client stands for its users, with as many jobs at once
	// as they have: the book's bounds on a client's waiting offers and on
	// all of them, a production guard against one flooding it, would
	// only turn jobs back to their clients' queues here.
	if x.BookPerClient <= 0 {
		x.BookPerClient = 1 << 30
	}
	if x.BookTotal <= 0 {
		x.BookTotal = 1 << 30
	}
	return nil
}

// silence is a time no server of a run goes without speaking: beyond the
// run's limit. Servers that speak only when their state changes are
// never lost in a simulation, where nothing fails, and the House's
// sweep must not take their quiet for a failure.
func (c *Config) silence() time.Duration { return c.Limit + 24*time.Hour }

// nodeReadings is how often a node's running contracts are read: every
// ReadingEvery when polling, else never before the final reading.
func (c *Config) nodeReadings() time.Duration {
	if c.Poll {
		return c.Exchange.ReadingEvery
	}
	return c.silence()
}
