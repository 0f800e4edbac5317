// Package market runs a whole Bourse market in one process: an embedded
// NATS server with JetStream, the exchange on a store, GPU server agents
// with different policies and GPU classes, and bidding agents with budgets
// and strategies. `bourse demo` shows it; the end-to-end tests drive it.
package market

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// Currency is the market's money: credits with cents.
var Currency = scenario.Currency

// Config sizes a market. Store is required; the rest have defaults.
type Config struct {
	Store   exchange.Store
	Servers []scenario.ServerSpec // nil: DefaultServers
	// Limits are the exchange's limits per party (natsvc's defaults if
	// zero); a benchmark of one client lifts them.
	Limits  natsvc.Limits
	Clients []scenario.ClientSpec // nil: DefaultClients
	// Wallets are clients funded like Clients that no bidder of the
	// market trades as: the person at the keyboard trades as one with
	// bourse bid, and the bots do not drain it meanwhile.
	Wallets []Wallet
	Seed    uint64 // job generation; 1 by default
	// JobScale stretches job run times (1 by default); tests shrink them.
	JobScale float64
	Logger   *slog.Logger
	// StoreDir holds JetStream's files; empty keeps the stream in memory
	// (the embedded server then still gets a fresh directory of its own,
	// removed at Stop, rather than NATS's default under the system's
	// temporary folder, which any earlier nats-server may have filled).
	StoreDir string
	// NATSURL, if set, is an external NATS server (with JetStream) to use
	// instead of an embedded one.
	NATSURL string
	// Nodes, if set instead, are the client URLs of an external NATS
	// cluster's nodes. Every party lists them all, starting with a node
	// of its own, taken in turn in the order the parties connect (the
	// servers first where the exchange runs elsewhere): so servers sit on
	// different nodes, and each moves to another when its node goes.
	Nodes []string
	// MarketEvery is how often the exchange publishes market data, 2s:
	// a demo is short.
	MarketEvery time.Duration
	// ClientTimeout bounds each bidder request (bidder's default if 0).
	ClientTimeout time.Duration
	// ClientRetries is how often a bidder sends a request that got no
	// answer again under its request id (bidder's default if 0).
	ClientRetries int
	// PartyOptions, if set, are options for the NATS connection of each
	// party the market connects (a client or server id; "" for its own
	// exchange): its credentials, where NATS asks for them.
	PartyOptions func(party string) []nats.Option
	// External, if true, starts no exchange: one runs elsewhere (another
	// process) on Store's database and NATSURL. Store still funds the
	// clients and audits the ledger.
	External bool
	// Treasury, if set, is the treasury the market's administrator
	// funds, caps and pays allowances through; else the one beside Store.
	Treasury *treasury.Treasury
	// Faucet, if positive, serves the demo's faucet (faucet.go) for the
	// Wallets: the most it grants at a time.
	Faucet decimal.Decimal
}

// Wallet is a funded client that the market's bidders leave alone.
type Wallet struct {
	ID     string
	Budget decimal.Decimal
}

// admin is who the market's own administrative actions are recorded as.
const admin = "market"

// Market is a running market. Stop it with Stop.
type Market struct {
	cfg       Config
	log       *slog.Logger
	ns        *natsserver.Server
	natsDir   string // the embedded server's JetStream directory
	ownDir    bool   // natsDir is a temporary directory Stop removes
	conns     []*nats.Conn
	url       string
	exchanges []*natsvc.Service
	Tally     *Tally
	// Told is what each client was told for each request id it sent.
	Told    *Told
	cancelA context.CancelFunc // agents
	cancelC context.CancelFunc // allowances
	cancelB context.CancelFunc // bidders
	agents  sync.WaitGroup
	bidders sync.WaitGroup
	// allowances pays the clients' allowances while the market runs.
	allowances sync.WaitGroup
	Clients    []scenario.ClientSpec
	Servers    []scenario.ServerSpec
	Wallets    []Wallet

	finalsMu sync.Mutex
	finals   map[string]contract.Reading // by contract: each server's own record
}

// Final is the final reading the server of a contract made of its job: what
// the server itself says it ran, whatever the exchange counted.
func (m *Market) Final(id string) (contract.Reading, bool) {
	m.finalsMu.Lock()
	defer m.finalsMu.Unlock()
	r, ok := m.finals[id]
	return r, ok
}

func (m *Market) recordFinal(r contract.Reading) {
	m.finalsMu.Lock()
	defer m.finalsMu.Unlock()
	m.finals[r.Contract] = r
}

// Start builds the market and starts trading.
func Start(ctx context.Context, cfg Config) (*Market, error) {
	if cfg.Store == nil {
		return nil, errors.New("market: Config.Store is required")
	}
	if cfg.Servers == nil {
		cfg.Servers = scenario.DefaultServers()
	}
	if cfg.Clients == nil {
		cfg.Clients = scenario.DefaultClients()
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.JobScale <= 0 {
		cfg.JobScale = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Market{cfg: cfg, log: cfg.Logger, Tally: newTally(), Told: newTold(), Clients: cfg.Clients, Servers: cfg.Servers,
		Wallets: cfg.Wallets, finals: map[string]contract.Reading{}}
	if m.cfg.Treasury == nil {
		t, err := sqltreasury.Beside(ctx, cfg.Store.Ledger(), caps.NewPeriods(time.Now))
		if err != nil {
			return nil, fmt.Errorf("market: %w", err)
		}
		m.cfg.Treasury = t
	}
	if err := m.startNATS(); err != nil {
		return nil, err
	}
	if err := m.fund(ctx); err != nil {
		m.Stop(ctx)
		return nil, err
	}
	if err := m.serveFaucet(); err != nil {
		m.Stop(ctx)
		return nil, err
	}
	actx, cancelAllowances := context.WithCancel(context.Background())
	m.cancelC = cancelAllowances
	if err := m.payAllowances(actx); err != nil {
		m.Stop(ctx)
		return nil, err
	}
	if !cfg.External {
		if _, err := m.AddExchange(ctx, cfg.Store); err != nil {
			m.Stop(ctx)
			return nil, err
		}
	}
	if err := m.startServers(); err != nil {
		m.Stop(ctx)
		return nil, err
	}
	if err := m.startClients(); err != nil {
		m.Stop(ctx)
		return nil, err
	}
	return m, nil
}

func (m *Market) startNATS() error {
	if m.cfg.NATSURL != "" {
		m.url = m.cfg.NATSURL
		return nil
	}
	if len(m.cfg.Nodes) > 0 {
		m.url = strings.Join(m.cfg.Nodes, ",")
		return nil
	}
	m.natsDir = m.cfg.StoreDir
	if m.natsDir == "" {
		// NATS's default store is shared by every server on the machine
		// that was given none: a stream left there by another process
		// (a file stream where we want one in memory) stops the exchange.
		dir, err := os.MkdirTemp("", "bourse-nats-")
		if err != nil {
			return fmt.Errorf("market: embedded NATS store: %w", err)
		}
		m.natsDir, m.ownDir = dir, true
	}
	if err := m.startNATSOn(natsserver.RANDOM_PORT); err != nil {
		m.removeNATSDir()
		return err
	}
	return nil
}

// removeNATSDir removes the embedded server's store if the market made it.
func (m *Market) removeNATSDir() {
	if !m.ownDir {
		return
	}
	if err := os.RemoveAll(m.natsDir); err != nil {
		m.log.Warn("remove the embedded NATS store", "dir", m.natsDir, "err", err)
	}
	m.ownDir = false
}

// AddExchange starts an exchange instance on store, in the queue group of
// those running already: the way to scale out.
func (m *Market) AddExchange(ctx context.Context, store exchange.Store) (*natsvc.Service, error) {
	nc, err := m.connect("")
	if err != nil {
		return nil, err
	}
	storage := jetstream.FileStorage
	if m.cfg.StoreDir == "" && m.cfg.NATSURL == "" && len(m.cfg.Nodes) == 0 {
		storage = jetstream.MemoryStorage
	}
	// The treasury's Periods: a cap set and the offers it caps meet the
	// same period.
	ex, err := natsvc.Start(ctx, natsvc.Config{Conn: nc, Config: exchange.Config{Store: store, Logger: m.log,
		SpendCaps: m.cfg.Treasury.SpendCaps(time.Second), Periods: m.cfg.Treasury.Periods(),
		MarketEvery: cmp.Or(m.cfg.MarketEvery, 2*time.Second)}, StreamStorage: storage, Limits: m.cfg.Limits})
	if err != nil {
		return nil, err
	}
	m.exchanges = append(m.exchanges, ex)
	return ex, nil
}

func (m *Market) startNATSOn(port int) error {
	opts := &natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, NoSigs: true, NoLog: true, StoreDir: m.natsDir}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return fmt.Errorf("market: embedded NATS: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return errors.New("market: embedded NATS did not start")
	}
	m.ns, m.url = ns, ns.ClientURL()
	return nil
}

// RestartNATS stops the embedded NATS server and starts a new one on the
// same port and store, as an operator's restart would: every party must
// reconnect, and readings published meanwhile are retried.
func (m *Market) RestartNATS(down time.Duration) error {
	if m.ns == nil {
		return errors.New("market: NATS is external")
	}
	port := m.ns.Addr().(*net.TCPAddr).Port
	m.ns.Shutdown()
	m.ns.WaitForShutdown()
	time.Sleep(down)
	return m.startNATSOn(port)
}

// URL is the embedded NATS server's address, for outside clients.
func (m *Market) URL() string { return m.url }

func (m *Market) connect(party string) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name("bourse-demo-" + party), nats.MaxReconnects(-1)}
	if party != "" {
		opts = append(opts, nats.CustomInboxPrefix(protocol.InboxPrefix(party)))
	}
	if m.cfg.PartyOptions != nil {
		opts = append(opts, m.cfg.PartyOptions(party)...)
	}
	url := m.url
	if n := len(m.cfg.Nodes); n > 0 {
		// This party's own node first, then the others in turn.
		first := len(m.conns) % n
		url = strings.Join(append(slices.Clone(m.cfg.Nodes[first:]), m.cfg.Nodes[:first]...), ",")
		opts = append(opts, nats.DontRandomize())
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("market: connect %s: %w", party, err)
	}
	m.conns = append(m.conns, nc)
	return nc, nil
}

// fund creates the currency and each client's wallet with its budget, as
// an administrator would.
func (m *Market) fund(ctx context.Context) error {
	t := m.cfg.Treasury
	if _, err := t.CreateCurrency(ctx, admin, Currency, "currency/"+string(Currency.Code)); err != nil {
		return fmt.Errorf("market: create currency: %w", err)
	}
	for _, w := range m.cfg.Wallets {
		if err := m.openWallet(ctx, w.ID, w.Budget); err != nil {
			return err
		}
	}
	for _, c := range m.cfg.Clients {
		if err := m.openWallet(ctx, c.ID, c.Budget); err != nil {
			return err
		}
		if c.CapGPUs > 0 {
			if _, err := t.SetCap(ctx, admin, c.ID, c.CapGPUs, "cap-set/"+c.ID); err != nil {
				return fmt.Errorf("market: %w", err)
			}
		}
		if c.DailySpend.IsPositive() {
			if _, err := t.SetSpendCap(ctx, admin, c.ID, Currency.Code, caps.Day, c.DailySpend, decimal.RequireFromString("0.8"), "spend-cap/"+c.ID); err != nil {
				return fmt.Errorf("market: %w", err)
			}
		}
	}
	return nil
}

// openWallet opens client id's wallet and grants it budget.
func (m *Market) openWallet(ctx context.Context, id string, budget decimal.Decimal) error {
	t := m.cfg.Treasury
	if _, err := t.Open(ctx, admin, Currency.Code, id, "", treasury.OpenKey(currency.WalletID(Currency.Code, id))); err != nil {
		return fmt.Errorf("market: open wallet of %s: %w", id, err)
	}
	if _, err := t.Grant(ctx, admin, Currency.Code, id, budget, "grant/"+id, "demo budget"); err != nil {
		return fmt.Errorf("market: fund %s: %w", id, err)
	}
	return nil
}

// payAllowances sets the clients' allowances in the treasury and runs
// the treasury's scheduler every shortest period until ctx ends, as every
// bourse exchange instance does.
func (m *Market) payAllowances(ctx context.Context) error {
	start := time.Now()
	every := time.Duration(0)
	for _, c := range m.cfg.Clients {
		a := c.Allowance
		if a == nil {
			continue
		}
		r := allowance.Rule{Wallet: currency.WalletID(Currency.Code, c.ID), A: a.A, B: a.B, Period: a.Period, Start: start}
		if _, err := m.cfg.Treasury.SetAllowance(ctx, admin, r, fmt.Sprintf("allowance/%s/%d", c.ID, start.UnixNano())); err != nil {
			return fmt.Errorf("market: %w", err)
		}
		if p := cmp.Or(a.Period, time.Hour); every == 0 || p < every {
			every = p
		}
	}
	if every == 0 {
		return nil
	}
	m.allowances.Go(func() {
		treasury.NewScheduler(m.cfg.Treasury, "demo").Loop(ctx, every, m.log)
	})
	return nil
}

// Treasury is the treasury the market's administrator acts through.
func (m *Market) Treasury() *treasury.Treasury { return m.cfg.Treasury }

func (m *Market) startServers() error {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancelA = cancel
	for _, s := range m.cfg.Servers {
		nc, err := m.connect(s.ID)
		if err != nil {
			return err
		}
		a, err := agent.New(agent.Config{Conn: nc, ID: s.ID, Currency: Currency, GPUs: s.GPUs(), Policy: s.Policy,
			OnFinal: m.recordFinal, Logger: m.log})
		if err != nil {
			return fmt.Errorf("market: server %s: %w", s.ID, err)
		}
		m.agents.Add(1)
		go func() {
			defer m.agents.Done()
			if err := a.Run(ctx); err != nil {
				m.log.Error("server agent stopped", "server", s.ID, "err", err)
			}
		}()
	}
	return m.waitForServers()
}

// waitForServers gives the agents' hellos time to land, so that the first
// offers find them.
func (m *Market) waitForServers() error {
	if len(m.exchanges) == 0 {
		time.Sleep(time.Second) // an external exchange: give the hellos a moment
		return nil
	}
	ex := m.exchanges[0]
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if ex.LiveServers() >= len(m.cfg.Servers) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("market: only %d of %d servers registered", ex.LiveServers(), len(m.cfg.Servers))
}

func (m *Market) startClients() error {
	ctx, cancel := context.WithCancel(context.Background())
	m.cancelB = cancel
	for i, c := range m.cfg.Clients {
		nc, err := m.connect(c.ID)
		if err != nil {
			return err
		}
		cl, err := bidder.Dial(bidder.Config{ID: c.ID, Conn: nc, Timeout: m.cfg.ClientTimeout, Retries: m.cfg.ClientRetries})
		if err != nil {
			return err
		}
		events, err := cl.Events(ctx, 256)
		if err != nil {
			return err
		}
		b := &bidderLoop{m: m, spec: c, client: cl, ends: newEndings(ctx, events),
			rng: rand.New(rand.NewPCG(m.cfg.Seed, uint64(i)))}
		for range max(1, c.Parallel) {
			m.bidders.Add(1)
			go func() {
				defer m.bidders.Done()
				b.run(ctx)
			}()
		}
	}
	return nil
}

// Stop ends trading: the bidders stop offering and wait for their running
// contracts (up to grace), the agents stop (settling what still runs), the
// exchange takes the last readings, and NATS shuts down.
func (m *Market) Stop(ctx context.Context) {
	if m.cancelB != nil {
		m.Tally.closing.Store(true)
		done := make(chan struct{})
		go func() { m.bidders.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
		}
		m.cancelB()
		m.bidders.Wait()
	}
	if m.cancelA != nil {
		m.cancelA()
		m.agents.Wait()
	}
	if m.cancelC != nil {
		m.cancelC()
		m.allowances.Wait()
	}
	m.waitSettled(ctx)
	for _, ex := range m.exchanges {
		ex.Stop()
	}
	for _, nc := range m.conns {
		nc.Close()
	}
	if m.ns != nil {
		m.ns.Shutdown()
		m.ns.WaitForShutdown()
	}
	m.removeNATSDir()
}

// waitSettled waits until the ledger has no open hold (every contract
// settled or voided) or ctx ends.
func (m *Market) waitSettled(ctx context.Context) {
	for {
		r, err := m.cfg.Store.Ledger().Audit(ctx)
		if err != nil || r.OpenHolds == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
