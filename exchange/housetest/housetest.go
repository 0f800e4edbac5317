// Package housetest runs an exchange.House where its rules can be tested
// alone: on the memory store, a manual clock and a router that calls
// server.Nodes in the same goroutine (as the simulator's does), with the
// events it sends kept for the test to read. Nothing sleeps and nothing
// links NATS: a test moves the clock, and what the House does at that
// time happens before the call that moves it returns.
package housetest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/clocktest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// Currency is the harness's currency: scale 2.
const Currency = "CRED"

// T0 is the manual clock's first instant on the memory store.
var T0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// Clock is a manual clock: it moves only when told.
type Clock = clocktest.Clock

// Harness is a House on the memory store and a manual clock, with its
// servers in process.
type Harness struct {
	T      testing.TB
	Clock  *Clock
	Store  exchange.Store
	Ledger currency.Ledger
	House  *exchange.House
	Router *Router

	cfg     exchange.Config
	mu      sync.Mutex
	events  []Event
	waiting []func() // run at the House's next sleeps (WhileWaiting)
}

// Event is one event the House sent a client.
type Event struct {
	Client string
	exchange.Event
}

// New is a harness on the memory store whose House has cfg's settings
// (Store, Router, Notifier and Now are the harness's), with currency
// CRED.
func New(t testing.TB, cfg exchange.Config) *Harness {
	t.Helper()
	clock := clocktest.New(T0)
	return newOn(t, memstore.New(mem.New(mem.Options{Now: clock.Now})), clock, cfg)
}

// NewOn is New on store, whose ledger must be empty. Its clock starts at
// the wall clock's second: a SQL ledger keeps the database's time, by
// which holds fall due.
func NewOn(t testing.TB, store exchange.Store, cfg exchange.Config) *Harness {
	t.Helper()
	return newOn(t, store, clocktest.New(time.Now().UTC().Truncate(time.Second)), cfg)
}

// NewWith is New on the store that open makes, its ledger on the
// harness's clock (now), so that holds fall due as the test moves it:
// for a SQL ledger, whose clock is otherwise the wall clock's. The clock
// starts at the wall clock's second, as NewOn's does, since a SQL store
// still times how long it keeps an ended negotiation's answer by the
// database's clock.
func NewWith(t testing.TB, open func(now func() time.Time) exchange.Store, cfg exchange.Config) *Harness {
	t.Helper()
	clock := clocktest.New(time.Now().UTC().Truncate(time.Second))
	return newOn(t, open(clock.Now), clock, cfg)
}

func newOn(t testing.TB, store exchange.Store, clock *Clock, cfg exchange.Config) *Harness {
	t.Helper()
	h := &Harness{T: t, Clock: clock, Store: store, Ledger: store.Ledger()}
	h.Router = &Router{h: h, Nodes: map[string]*server.Node{}, Silent: map[string]bool{}, Asked: map[string]int{}}
	require.NoError(t, h.Ledger.CreateCurrency(context.Background(), currency.Currency{Code: Currency, Scale: 2}))
	h.cfg = cfg
	h.House = h.Instance()
	return h
}

// Instance is another House on the harness's store, router, events and
// clock, as another exchange instance would be (or this one after a
// restart): what it knows of the servers it learns from their next
// heartbeats (Beat).
func (h *Harness) Instance() *exchange.House {
	h.T.Helper()
	cfg := h.cfg
	cfg.Store, cfg.Router, cfg.Notifier, cfg.Now, cfg.Sleep = h.Store, h.Router, h, h.Clock.Now, h.sleep
	if cfg.Backlog == nil {
		cfg.Backlog = h.Router
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	house, err := exchange.New(cfg)
	require.NoError(h.T, err)
	return house
}

// Configure changes the settings of the Houses the harness makes from
// now on with tune, and makes h.House anew with them, as a restart
// would: for settings that need the harness's store, such as the spend
// caps of a treasury beside its ledger. Call it before adding servers,
// or Beat after it.
func (h *Harness) Configure(tune func(*exchange.Config)) {
	h.T.Helper()
	tune(&h.cfg)
	h.House = h.Instance()
}

// WhileWaiting runs f once, the next time a House sleeps on the
// harness's clock (a try waiting for another try of its request,
// lock.go), before the clock moves: what happens elsewhere meanwhile,
// such as the other try's server answering.
func (h *Harness) WhileWaiting(f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.waiting = append(h.waiting, f)
}

// sleep is the Houses' Config.Sleep: what the test set to happen
// meanwhile happens, then the clock moves on by d.
func (h *Harness) sleep(ctx context.Context, d time.Duration) error {
	h.mu.Lock()
	meanwhile := h.waiting
	h.waiting = nil
	h.mu.Unlock()
	for _, f := range meanwhile {
		f()
	}
	return h.Clock.Sleep(ctx, d)
}

// deliver hands the House server's reading r as it travels: through
// House.Reading, as bytes under its message id with the server's
// signature, if the server signs (Router.Sign), else through House.Count.
func (h *Harness) deliver(ctx context.Context, server string, r contract.Reading) error {
	sign, ok := h.Router.signer(server)
	if !ok {
		return h.House.Count(ctx, server, r)
	}
	body, err := protocol.Marshal(r)
	if err != nil {
		return err
	}
	sig := ""
	if sign != nil {
		sig = sign(body)
	}
	return h.House.Reading(ctx, server, r.Contract, protocol.MsgID(server, r), body, sig)
}

// ReleaseReadings delivers the readings server's queue kept
// (Router.QueueReadings), in order, and delivers its readings as they
// come from now on.
func (h *Harness) ReleaseReadings(server string) {
	h.T.Helper()
	r := h.Router
	r.mu.Lock()
	rds := r.queued[server]
	delete(r.queued, server)
	delete(r.queueing, server)
	r.mu.Unlock()
	for _, rd := range rds {
		require.NoError(h.T, h.deliver(context.Background(), server, rd), "reading %d of %s", rd.Seq, rd.Contract)
	}
}

// Now is the harness's time.
func (h *Harness) Now() time.Time { return h.Clock.Now() }

// Advance moves the clock on by d.
func (h *Harness) Advance(d time.Duration) { h.Clock.Set(h.Clock.Now().Add(d)) }

// Notify keeps the event.
func (h *Harness) Notify(client string, ev exchange.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, Event{Client: client, Event: ev})
}

// Events returns the events sent to client so far, and forgets them.
func (h *Harness) Events(client string) []exchange.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []exchange.Event
	kept := h.events[:0]
	for _, e := range h.events {
		if e.Client == client {
			out = append(out, e.Event)
		} else {
			kept = append(kept, e)
		}
	}
	h.events = kept
	return out
}

// Wallet opens client's wallet with amount in it.
func (h *Harness) Wallet(client, amount string) currency.AccountID {
	h.T.Helper()
	ctx := context.Background()
	w := currency.WalletID(Currency, client)
	_, err := h.Ledger.OpenAccount(ctx, currency.Account{ID: w, Currency: Currency, Kind: currency.Wallet})
	require.NoError(h.T, err)
	if a := decimal.RequireFromString(amount); a.IsPositive() {
		_, err = currency.Do(ctx, h.Ledger, currency.Grant(Currency, client, a, "grant/"+client, "harness"))
		require.NoError(h.T, err)
	}
	return w
}

// Balance is the balance of account id.
func (h *Harness) Balance(id currency.AccountID) currency.Balance {
	h.T.Helper()
	b, err := h.Ledger.Balance(context.Background(), id)
	require.NoError(h.T, err)
	return b
}

// Audit fails the test unless the ledger's invariants hold.
func (h *Harness) Audit() {
	h.T.Helper()
	r, err := h.Ledger.Audit(context.Background())
	require.NoError(h.T, err)
	require.True(h.T, r.OK(), "%s", r)
}

// Server adds a server of n GPUs of model with policy (nil for
// server.Posted{}, which takes any offer that fits) and the synthetic
// runner, and says its hello.
func (h *Harness) Server(id, model string, n int, policy server.Policy) *server.Node {
	h.T.Helper()
	return h.ServerRunning(id, model, n, policy, &server.Synthetic{Now: h.Clock.Now})
}

// ServerRunning is Server with runner in place of the synthetic one.
func (h *Harness) ServerRunning(id, model string, n int, policy server.Policy, runner server.Runner) *server.Node {
	h.T.Helper()
	var gpus []contract.GPU
	for i := range n {
		gpus = append(gpus, contract.GPU{Index: i, Model: model, MemoryMiB: 81920})
	}
	ids := 0
	node, err := server.NewNode(server.NodeConfig{ID: id, Currency: currency.Currency{Code: Currency, Scale: 2}, GPUs: gpus,
		Policy: policy, Runner: runner, ReadingEvery: h.House.Config().ReadingEvery,
		NewID:  func() string { ids++; return fmt.Sprintf("%s-k%d", id, ids) },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(h.T, err)
	h.Router.Nodes[id] = node
	_, err = h.House.Hello(context.Background(), id, node.Hello(h.Now()))
	require.NoError(h.T, err)
	return node
}

// Tick does what the servers' agents do at the clock's time: each node
// says which readings are due and which jobs stop or start, and the House
// hears of each; then every server heartbeats. Silent servers do nothing.
func (h *Harness) Tick() {
	ctx := context.Background()
	for _, id := range slices.Sorted(maps.Keys(h.Router.Nodes)) {
		if h.Router.silent(id) {
			continue
		}
		n := h.Router.Nodes[id]
		due := n.Tick(h.Now())
		for _, r := range due.Readings {
			if !h.Router.readingsHeld(id) && !h.Router.queue(id, r) {
				_ = h.deliver(ctx, id, r)
			}
		}
		h.Router.stop(id, due.Stops)
		for _, c := range due.Launch {
			if st, err := n.Launch(ctx, h.Now(), c); err == nil {
				_, _ = h.House.Started(ctx, id, st)
			}
		}
	}
	h.Beat()
}

// Beat has every server but the silent ones heartbeat as it stands, to
// the harness's House and to others.
func (h *Harness) Beat(others ...*exchange.House) {
	for _, id := range slices.Sorted(maps.Keys(h.Router.Nodes)) {
		if h.Router.silent(id) {
			continue
		}
		for _, house := range append([]*exchange.House{h.House}, others...) {
			_ = house.Heartbeat(context.Background(), id, h.Router.Nodes[id].Hello(h.Now()))
		}
	}
}

// Run ticks every step until d has passed, sweeping and matching after
// each tick as the House's driver does.
func (h *Harness) Run(d, step time.Duration) {
	end := h.Now().Add(d)
	for h.Now().Before(end) {
		h.Advance(step)
		h.Tick()
		h.House.Sweep(context.Background())
		h.House.Match(context.Background())
	}
}
