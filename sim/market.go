package sim

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/trade"
)

// Config is a market to simulate: a scenario's servers and clients. Servers
// and Clients are required.
type Config struct {
	Servers []scenario.ServerSpec
	Clients []scenario.ClientSpec
	Seed    uint64
	// Start is the virtual time the market opens, 2026-01-01 UTC if zero.
	Start time.Time
	// Offers is how many offers the clients make before they stop bidding;
	// the market then runs until every contract has ended.
	Offers int
	// JobScale stretches the clients' job run times, 1 if zero.
	JobScale float64
	// Exchange tunes the House; its Store, Router, Notifier and Now are the
	// simulation's.
	Exchange exchange.Config
	// Log, if set, gets one JSON line per contract event, in order: the
	// contract log, the same bytes for the same Config.
	Log io.Writer
}

// Market is a simulated market: the House over an in-memory store on the
// engine's clock, server nodes and bidding clients.
type Market struct {
	cfg     Config
	e       *Engine
	ledger  *mem.Ledger
	store   *memstore.Store
	house   *exchange.House
	nodes   map[string]*server.Node
	ids     []string           // the servers, sorted
	clients map[string]*client // by client and lane
	log     *eventLog
	offers  int
	open    int // contracts not yet ended
	busy    int // clients with a job under way
	stats   Stats
	finals  map[string]trade.Reading
	running map[string]*client // the contracts whose end a client awaits
}

// Stats counts what happened.
type Stats struct {
	Offers, Contracts, Settled, Voided, Failed int
}

// New builds the market: its currency and funded wallets, its servers
// registered with the House. Run it with Run.
func New(cfg Config) (*Market, error) {
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if cfg.JobScale <= 0 {
		cfg.JobScale = 1
	}
	m := &Market{cfg: cfg, e: NewEngine(cfg.Start), nodes: map[string]*server.Node{}, clients: map[string]*client{},
		finals: map[string]trade.Reading{}, running: map[string]*client{}}
	m.log = &eventLog{w: cfg.Log}
	m.ledger = mem.New(mem.Options{Now: m.e.Now})
	m.store = memstore.New(m.ledger)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	hc := cfg.Exchange
	hc.Store, hc.Now = m.store, m.e.Now
	hc.Router = &router{m: m, rng: rand.New(rand.NewPCG(cfg.Seed, 0))}
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
	cur := scenario.Currency
	if err := m.ledger.CreateCurrency(ctx, cur); err != nil {
		return nil, err
	}
	for _, s := range cfg.Servers {
		ids := 0
		n, err := server.NewNode(server.NodeConfig{ID: s.ID, Currency: cur, GPUs: s.GPUs(), Policy: s.Policy,
			Runner: &server.Synthetic{Now: m.e.Now}, ReadingEvery: house.Config().ReadingEvery, Logger: quiet,
			NewID: func() string { ids++; return fmt.Sprintf("%s-k%d", s.ID, ids) }})
		if err != nil {
			return nil, fmt.Errorf("sim: server %s: %w", s.ID, err)
		}
		m.nodes[s.ID] = n
		m.ids = append(m.ids, s.ID)
		if _, err := house.Hello(ctx, s.ID, n.Hello(m.e.Now())); err != nil {
			return nil, fmt.Errorf("sim: server %s: hello: %w", s.ID, err)
		}
	}
	slices.Sort(m.ids)
	for i, c := range cfg.Clients {
		if _, err := m.ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cur.Code, c.ID), Currency: cur.Code, Kind: currency.Wallet}); err != nil {
			return nil, err
		}
		if _, err := currency.Do(ctx, m.ledger, currency.Grant(cur.Code, c.ID, c.Budget, "grant/"+c.ID, "endowment")); err != nil {
			return nil, err
		}
		jobs := new(int)
		for lane := range max(1, c.Parallel) {
			m.clients[fmt.Sprintf("%s/%d", c.ID, lane)] = &client{m: m, spec: c, jobs: jobs,
				rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)<<8|uint64(lane)+1))}
		}
	}
	return m, nil
}

// Run trades until the clients have made Offers offers and every contract
// has ended, or until the virtual time limit passes.
func (m *Market) Run(limit time.Duration) Stats {
	hc := m.house.Config()
	for _, id := range m.ids {
		n := m.nodes[id]
		m.e.Every(hc.ReadingEvery, func() bool {
			m.tick(id, n)
			return true
		})
		m.e.Every(hc.Heartbeat, func() bool {
			_ = m.house.Heartbeat(context.Background(), id, n.Hello(m.e.Now()))
			return true
		})
	}
	m.e.Every(hc.SweepEvery, func() bool {
		m.house.Sweep(context.Background())
		if m.done() {
			m.e.Halt()
		}
		return true
	})
	for i, key := range slices.Sorted(maps.Keys(m.clients)) {
		m.e.After(time.Duration(i)*time.Millisecond, m.clients[key].nextJob)
	}
	m.e.Run(m.cfg.Start.Add(limit))
	return m.stats
}

// done reports that the market has nothing left to do.
func (m *Market) done() bool { return m.offers >= m.cfg.Offers && m.busy == 0 && m.open == 0 }

// tick carries out what a node says is due, as the agent would: readings
// to the House, jobs stopped (their finals to the House), booked jobs
// launched and their starts reported.
func (m *Market) tick(id string, n *server.Node) {
	ctx := context.Background()
	due := n.Tick(m.e.Now())
	for _, r := range due.Readings {
		_ = m.house.Count(ctx, id, r)
	}
	m.stop(id, due.Stops)
	for _, c := range due.Launch {
		if st, err := n.Launch(ctx, m.e.Now(), c); err == nil {
			_, _ = m.house.Started(ctx, id, st)
		}
	}
}

// stop stops the jobs and hands their final readings to the House.
func (m *Market) stop(id string, stops []server.Stop) {
	ctx := context.Background()
	n := m.nodes[id]
	for _, s := range stops {
		_ = s.Job.Stop(ctx, s.Reason)
		r, err := n.Stopped(m.e.Now(), s.Contract)
		if err != nil {
			continue
		}
		m.finals[r.Contract] = r
		_ = m.house.Count(ctx, id, r)
	}
}

// Notify is the House's Notifier: the contract log, and the end of a
// contract for its client.
func (m *Market) Notify(client string, ev protocol.Event) {
	m.log.write(ev)
	switch ev.Type {
	case protocol.EventAccepted:
		m.open++
		m.stats.Contracts++
	case protocol.EventSettled, protocol.EventVoided:
		m.open--
		if ev.Type == protocol.EventSettled {
			m.stats.Settled++
		} else {
			m.stats.Voided++
		}
		if c := m.running[ev.Contract.ID]; c != nil {
			delete(m.running, ev.Contract.ID)
			c.think()
		}
	}
}

// House is the simulation's exchange, for reading contracts and balances.
func (m *Market) House() *exchange.House { return m.house }

// Store is the simulation's store.
func (m *Market) Store() exchange.Store { return m.store }

// Final is the final reading a server made of a contract's job: what the
// server says it ran.
func (m *Market) Final(contract string) (trade.Reading, bool) {
	r, ok := m.finals[contract]
	return r, ok
}

// Contracts lists every contract of the market, by id.
func (m *Market) Contracts(ctx context.Context) ([]trade.Contract, error) {
	var out []trade.Contract
	for _, c := range m.cfg.Clients {
		cs, err := m.store.Contracts(ctx, c.ID, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	slices.SortFunc(out, func(a, b trade.Contract) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// Engine is the market's clock and event queue.
func (m *Market) Engine() *Engine { return m.e }
