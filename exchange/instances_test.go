package exchange_test

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/protocol"
)

// TestSweepsOfThreeInstances: three exchange instances on one store sweep
// at once, as every instance does every second, over contracts whose
// server went silent and contracts never started. Each contract ends
// once: its money moves once (the audit), and one instance alone tells
// its client (one event) and its server (one kill); nothing waits for an
// instance in charge, so the sweeps of two end everything while the third
// is stopped. On memory and on PostgreSQL.
func TestSweepsOfThreeInstances(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		testSweeps(t, memstore.New(mem.New(mem.Options{})), func() exchange.Store { return nil })
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.FreshDB(t)
		open := func() exchange.Store {
			l, err := sqlledger.Open(context.Background(), url, sqlledger.Options{})
			require.NoError(t, err)
			t.Cleanup(l.Close)
			s, err := sqlstore.Open(context.Background(), l)
			require.NoError(t, err)
			t.Cleanup(s.Close)
			return s
		}
		testSweeps(t, open(), open)
	})
}

// testSweeps runs the three instances on first, or each on a store of
// its own from another (its own pool, as instances have) where that gives
// one.
func testSweeps(t *testing.T, first exchange.Store, another func() exchange.Store) {
	ctx := context.Background()
	const running, unstarted = 24, 12
	t0 := time.Now().UTC()
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }

	l := first.Ledger()
	cur := currency.Currency{Code: "CRED", Scale: 2}
	require.NoError(t, l.CreateCurrency(ctx, cur))
	wallet, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cur.Code, "ada"), Currency: cur.Code, Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "grant", From: currency.IssuanceID(cur.Code), To: wallet.ID, Amount: decimal.NewFromInt(1000)})
	require.NoError(t, err)
	_, err = l.OpenAccount(ctx, currency.Account{ID: currency.RevenueID(cur.Code, "gpu1"), Currency: cur.Code, Kind: currency.Revenue})
	require.NoError(t, err)
	terms := contract.Terms{Client: "ada", Currency: "CRED", GPUs: 1, TimeLimit: time.Hour, Prepayment: decimal.NewFromInt(10),
		P: contract.Flat(decimal.RequireFromString("0.001"))}
	for i := range running + unstarted {
		id := fmt.Sprintf("c-%02d", i)
		c := contract.Contract{ID: id, Client: "ada", Server: "gpu1", Terms: terms, State: contract.StateAccepted,
			AcceptedAt: t0, StartDeadline: t0.Add(15 * time.Second)}
		_, _, err := first.Open(ctx, c, "", currency.Reserve{Key: "escrow/" + id, Hold: currency.HoldID(id), From: wallet.ID,
			Amount: terms.Prepayment, Deadline: t0.Add(24 * time.Hour)})
		require.NoError(t, err)
		if i < running {
			_, err = first.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
				c.State, c.StartedAt, c.LastSeen = contract.StateRunning, t0, t0
				c.Reading = &contract.Reading{Contract: id, Seq: 1, U: decimal.NewFromInt(30), T: contract.Duration(30 * time.Second), S: decimal.NewFromInt(1), At: t0}
				return nil, nil
			})
			require.NoError(t, err)
		}
	}

	told := &tally{}
	houses := make([]*exchange.House, 3)
	for i := range houses {
		store := another()
		if store == nil {
			store = first
		}
		houses[i], err = exchange.New(exchange.Config{Store: store, Router: told, Notifier: told, Now: now,
			ServerLostAfter: 10 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
	}
	// Every instance sweeps every second of the clock; the third stops
	// (a pause, a crash) before the first contract is due, and the
	// others end them all.
	for s := 1; s <= 40; s++ {
		clock.Store(t0.Add(time.Duration(s) * time.Second).UnixNano())
		sweeping := houses
		if s > 5 {
			sweeping = houses[:2]
		}
		var wg sync.WaitGroup
		for _, h := range sweeping {
			wg.Go(func() { h.Sweep(ctx) })
		}
		wg.Wait()
	}

	for i := range running + unstarted {
		id := fmt.Sprintf("c-%02d", i)
		c, err := first.Contract(ctx, id)
		require.NoError(t, err)
		want, reason := contract.StateSettled, contract.ReasonServerLost
		if i >= running {
			want, reason = contract.StateVoided, contract.ReasonNotStarted
		}
		assert.Equal(t, want, c.State, id)
		assert.Equal(t, reason, c.Reason, id)
		assert.Equal(t, 1, told.events[id], "%s: events sent", id)
		assert.Equal(t, 1, told.kills[id], "%s: kills sent", id)
	}
	rep, err := l.Audit(ctx)
	require.NoError(t, err)
	assert.True(t, rep.OK(), "%s", rep)
	assert.Zero(t, rep.OpenHolds)
}

// tally is the instances' router and notifier: it counts what they tell
// clients and servers, by contract.
type tally struct {
	mu            sync.Mutex
	events, kills map[string]int
}

func (n *tally) Notify(_ string, ev exchange.Event) {
	if ev.Type != protocol.EventSettled && ev.Type != protocol.EventVoided {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.events == nil {
		n.events = map[string]int{}
	}
	n.events[ev.Contract.ID]++
}

func (n *tally) Control(_ context.Context, c contract.Contract, action contract.Reason, done func(error)) {
	n.mu.Lock()
	if n.kills == nil {
		n.kills = map[string]int{}
	}
	n.kills[c.ID]++
	n.mu.Unlock()
	if done != nil {
		done(nil)
	}
}

func (n *tally) Ask(context.Context, protocol.ServerOffer, []string) iter.Seq[exchange.Answer] {
	return func(func(exchange.Answer) bool) {}
}

func (n *tally) Start(_ context.Context, _ protocol.Start, done func(protocol.Started, error)) {
	done(protocol.Started{}, fmt.Errorf("no server"))
}

func (n *tally) Cancel(string, string) {}

func (n *tally) Quote(context.Context, protocol.ServerOffer, []string) iter.Seq[exchange.Answer] {
	return func(func(exchange.Answer) bool) {}
}
