package sim

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/sim/metrics"
	"github.com/bourse/bourse/sim/workload"
)

// Simulation is a simulated market: the House over an in-memory store on the
// engine's clock, server nodes, and the clients that submit the
// workload's jobs and negotiate them with their strategies.
type Simulation struct {
	cfg     Config
	e       *Engine
	ledger  *mem.Ledger
	store   *memstore.Store
	house   *exchange.House
	nodes   map[string]*server.Node
	ids     []string       // the servers, sorted
	index   map[string]int // a server's place in ids: its alarm's key
	armed   []time.Time    // each server's next alarm, zero if none
	specs   map[string]scenario.ClientSpec
	clients map[string]*client
	log     *eventLog
	m       *metrics.Collector

	next    *workload.Job // the workload's next job, read ahead
	eof     bool          // the workload has no more jobs
	srcErr  error
	broke   error // a rule of the market broke, stopping the run
	arrived int
	offers  int

	live    map[*job]struct{} // arrived, neither completed nor given up
	lastEnd time.Time         // when the last job completed or was given up
	noMatch error             // why the first job that no server fits was refused
	jobs    map[string]*job   // by contract, while it holds escrow
	offerer *job              // the job whose offer the House is handling
	waiting queue             // jobs waiting for capacity, oldest first
	// standing are the jobs waiting in the House's book, by the id of
	// their waiting offer (Config.Standing).
	standing map[string]*job
	free     capacity // the servers' free GPUs, as their heartbeats say
	busy     int      // jobs negotiating
	open     int      // contracts holding escrow
	finals   map[string]contract.Reading
	reserves
}

// New builds the market: its currency, the scenario's clients' funded
// wallets, its servers registered with the House. Run it with Run.
func New(cfg Config) (*Simulation, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	m := &Simulation{cfg: cfg, e: NewEngine(cfg.Start), nodes: map[string]*server.Node{},
		specs: map[string]scenario.ClientSpec{}, clients: map[string]*client{},
		live: map[*job]struct{}{}, jobs: map[string]*job{}, finals: map[string]contract.Reading{}, standing: map[string]*job{}}
	m.log = &eventLog{w: cfg.Log, scale: scenario.Currency.Scale}
	m.ledger = mem.New(mem.Options{Now: m.e.Now, Remember: cfg.Forget})
	m.store = memstore.New(m.ledger)
	quiet := slog.New(slog.DiscardHandler)
	hc := cfg.Exchange
	// The virtual clock decides everything, the caps' periods included:
	// a Periods given in cfg.Exchange would read another clock.
	hc.Store, hc.Now, hc.Periods = m.store, m.e.Now, caps.NewPeriods(m.e.Now)
	hc.Router = &router{m: m}
	hc.Notifier = m
	if hc.Logger == nil {
		hc.Logger = quiet
	}
	house, err := exchange.New(hc)
	if err != nil {
		return nil, err
	}
	m.house = house
	ctx := context.Background()
	if err := m.ledger.CreateCurrency(ctx, scenario.Currency); err != nil {
		return nil, err
	}
	capacity := 0
	for _, s := range cfg.Servers {
		if err := m.addServer(ctx, s, quiet); err != nil {
			return nil, err
		}
		capacity += s.Count
	}
	slices.Sort(m.ids)
	m.index, m.armed = map[string]int{}, make([]time.Time, len(m.ids))
	for i, id := range m.ids {
		m.index[id] = i
	}
	m.m = metrics.NewCollector(cfg.Start, capacity, cfg.Sample)
	for _, c := range cfg.Clients {
		m.specs[c.ID] = c
	}
	// Named clients are funded from the start, in order, whether or not
	// they submit anything: funding is part of the fairness measure.
	for _, id := range slices.Sorted(maps.Keys(m.specs)) {
		if _, err := m.client(id); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Simulation) addServer(ctx context.Context, s scenario.ServerSpec, log *slog.Logger) error {
	if _, dup := m.nodes[s.ID]; dup {
		return fmt.Errorf("sim: server %s twice", s.ID)
	}
	ids := 0
	// A policy that learns is each server's own, seeded by the run's seed
	// and the server's id.
	s.Policy = server.ForServer(s.Policy, s.ID, m.cfg.Seed)
	n, err := server.NewNode(server.NodeConfig{ID: s.ID, Currency: scenario.Currency, GPUs: s.GPUs(), Policy: s.Policy,
		Runner: &server.Synthetic{Now: m.e.Now}, ReadingEvery: m.cfg.nodeReadings(), Logger: log,
		NewID: func() string { ids++; return s.ID + "-k" + strconv.Itoa(ids) }})
	if err != nil {
		return fmt.Errorf("sim: server %s: %w", s.ID, err)
	}
	m.nodes[s.ID] = n
	m.ids = append(m.ids, s.ID)
	m.free.add(s.ID, s.Model, s.Count)
	m.reserves.addServer(s)
	if _, err := m.house.Hello(ctx, s.ID, n.Hello(m.e.Now())); err != nil {
		return fmt.Errorf("sim: server %s: hello: %w", s.ID, err)
	}
	return nil
}

// client returns the client of that id, opening and funding its wallet
// the first time.
func (m *Simulation) client(id string) (*client, error) {
	if c := m.clients[id]; c != nil {
		return c, nil
	}
	spec, ok := m.specs[id]
	if !ok {
		if m.cfg.Default == nil {
			return nil, fmt.Errorf("sim: a job of client %q, who is not in the scenario, and there is no default client", id)
		}
		spec = *m.cfg.Default
		spec.ID = id
		spec.Strategy = own(spec.Strategy)
	}
	ctx := context.Background()
	cur := scenario.Currency
	if _, err := m.ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cur.Code, id), Currency: cur.Code, Kind: currency.Wallet}); err != nil {
		return nil, fmt.Errorf("sim: client %s: %w", id, err)
	}
	if spec.Budget.Sign() > 0 {
		if _, err := currency.Do(ctx, m.ledger, currency.Grant(cur.Code, id, spec.Budget, "grant/"+id, "endowment")); err != nil {
			return nil, fmt.Errorf("sim: client %s: %w", id, err)
		}
	}
	m.m.Fund(id, spec.Budget.InexactFloat64())
	c := &client{spec: spec, rng: rand.New(rand.NewPCG(m.cfg.Seed, uint64(len(m.clients))+1))}
	m.clients[id] = c
	if a := spec.Allowance; a != nil {
		if err := m.payAllowance(id, *a); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// payAllowance pays a client's allowance every period, by the ledger's
// own rules (currency/allowance), from the market's opening.
func (m *Simulation) payAllowance(id string, a scenario.Allowance) error {
	r := allowance.Rule{Wallet: currency.WalletID(scenario.Currency.Code, id), A: a.A, B: a.B, Period: a.Period, Start: m.cfg.Start}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("sim: client %s: %w", id, err)
	}
	period := cmp.Or(a.Period, time.Hour)
	var err error
	m.e.Every(period, func() bool {
		if _, err = allowance.Accrue(context.Background(), m.ledger, r, m.e.Now()); err != nil {
			m.broke = fmt.Errorf("sim: client %s's allowance: %w", id, err)
			m.e.Halt()
			return false
		}
		return !m.done()
	})
	return nil
}

// House is the simulation's exchange, for reading contracts and balances.
func (m *Simulation) House() *exchange.House { return m.house }

// Store is the simulation's store.
func (m *Simulation) Store() exchange.Store { return m.store }

// Final is the final reading a server made of a contract's job: what the
// server says it ran.
func (m *Simulation) Final(id string) (contract.Reading, bool) {
	r, ok := m.finals[id]
	return r, ok
}

// Contracts lists every contract of the market, by id.
func (m *Simulation) Contracts(ctx context.Context) ([]contract.Contract, error) {
	var out []contract.Contract
	for _, id := range m.clientIDs() {
		cs, err := m.store.Contracts(ctx, id, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	slices.SortFunc(out, func(a, b contract.Contract) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (m *Simulation) clientIDs() []string { return slices.Sorted(maps.Keys(m.clients)) }

// own copies a strategy that keeps state behind a pointer (Adaptive
// learns), so that each client made from the default learns alone.
func own(s strategy.Strategy) strategy.Strategy {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return s
	}
	c := reflect.New(v.Elem().Type())
	c.Elem().Set(v.Elem())
	return c.Interface().(strategy.Strategy)
}

// Engine is the market's clock and event queue.
func (m *Simulation) Engine() *Engine { return m.e }

// Offers is how many offers the clients made.
func (m *Simulation) Offers() int { return m.offers }
