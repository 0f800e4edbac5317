package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/clocktest"
	"github.com/bourse/bourse/internal/dectest"
)

// ClockedOpener is an Opener whose ledger runs on the clock now.
type ClockedOpener func(t testing.TB, now func() time.Time) exchange.Store

// Forgetter forgets what ended before `before` in s and its ledger, as
// memstore.Store.Forget and mem.Ledger.Compact do together.
type Forgetter func(s exchange.Store, before time.Time)

// RunForget checks a store that forgets ended contracts: a forgotten
// contract is a typed not-found and cannot be opened again, Contracts
// lists what is kept, and random workloads forgotten at random points
// (sequential and concurrent) keep every balance equal to a model's, the
// audit clean and statements ending at the balance.
func RunForget(t *testing.T, open ClockedOpener, forget Forgetter) {
	t.Run("Forgotten", func(t *testing.T) { testForgotten(t, open, forget) })
	t.Run("Random", func(t *testing.T) {
		for seed := range uint64(3) {
			w := newWork(t, open, seed)
			w.run(0, 800, rand.New(rand.NewPCG(seed, 1)), func(rng *rand.Rand) {
				if rng.IntN(40) == 0 {
					w.forget(forget, rng)
					w.check()
				}
			})
			w.forget(forget, rand.New(rand.NewPCG(seed, 2)))
			w.check()
			assert.NotEmpty(t, w.forgotten)
			t.Logf("seed %d: %d forgets, %d of %d ended contracts forgotten", seed, w.forgets, len(w.forgotten), len(w.ended))
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		w := newWork(t, open, 7)
		var wg sync.WaitGroup
		stop := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(9, 9))
			for {
				select {
				case <-stop:
					return
				default:
					w.forget(forget, rng)
					time.Sleep(100 * time.Microsecond)
				}
			}
		}()
		var workers sync.WaitGroup
		for g := range len(w.clients) {
			workers.Add(1)
			go func() {
				defer workers.Done()
				w.run(g, 300, rand.New(rand.NewPCG(uint64(g), 3)), func(*rand.Rand) {})
			}()
		}
		workers.Wait()
		close(stop)
		wg.Wait()
		w.check()
		t.Logf("%d forgets, %d of %d ended contracts forgotten", w.forgets, len(w.forgotten), len(w.ended))
	})
}

func testForgotten(t *testing.T, open ClockedOpener, forget Forgetter) {
	clock := clocktest.New(t0)
	s := open(t, clock.Now)
	f := &fixture{t: t, ctx: context.Background(), s: s, l: s.Ledger()}
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 2}))
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.RevenueID(gpu, server), Currency: gpu, Kind: currency.Revenue})
	require.NoError(t, err)
	t.Cleanup(f.audit)
	w := f.wallet("alice", "100")
	for i := range 5 {
		f.open(newContract(fmt.Sprint("c", i), "alice", clock.Now()))
	}
	clock.Advance(time.Minute)
	_, err = f.s.Update(f.ctx, "c0", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/c0", "4", clock.Now()), nil
	})
	require.NoError(t, err)
	_, err = f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.Reason, c.SettledAt, c.Refund = contract.StateVoided, contract.ReasonNotStarted, clock.Now(), c.Terms.Prepayment
		return []currency.Op{currency.Void{Key: "void/c1", Hold: "c1"}}, nil
	})
	require.NoError(t, err)
	f.run("c2", clock.Now())
	clock.Advance(time.Minute)
	horizon := clock.Now()
	clock.Advance(time.Minute)
	_, err = f.s.Update(f.ctx, "c3", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/c3", "1", clock.Now()), nil
	})
	require.NoError(t, err)
	f.balance(w, "75", "20")
	before, err := f.s.Contracts(f.ctx, "alice", 0)
	require.NoError(t, err)

	forget(f.s, horizon)
	f.balance(w, "75", "20")
	for _, id := range []string{"c0", "c1"} {
		_, err := f.s.Contract(f.ctx, id)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%s: %v", id, err)
		assert.ErrorIs(t, err, currency.ErrForgotten)
		_, err = f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) { return nil, nil })
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%s: %v", id, err)
		// An old id opens no second escrow.
		again := newContract(id, "alice", clock.Now())
		_, created, err := f.s.Open(f.ctx, again, "", reserve(again, "escrow/"+id+"/again"))
		assert.Error(t, err)
		assert.False(t, created)
	}
	f.balance(w, "75", "20")
	_, err = f.s.Contract(f.ctx, "never")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	assert.NotErrorIs(t, err, currency.ErrForgotten)
	for _, id := range []string{"c2", "c3", "c4"} {
		f.get(id)
	}
	cs, err := f.s.Contracts(f.ctx, "alice", 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"c4", "c3", "c2"}, ids(cs))
	assert.Equal(t, ids(before)[:3], ids(cs))
	cs, err = f.s.Contracts(f.ctx, "alice", 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"c4", "c3"}, ids(cs))
	stale, err := f.s.Stale(f.ctx, clock.Now().Add(time.Hour), clock.Now().Add(time.Hour), 0)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"c2", "c4"}, ids(stale))
	checkStatement(t, f, w)
}

// work is a random market over one store: clients open contracts, run,
// settle and void them, and a model says what every balance must be.
type work struct {
	f       *fixture
	clock   *clocktest.Clock
	clients []string
	// gate lets moves run together but not while Forget runs, so that the
	// model knows which contracts had ended when it did.
	gate sync.RWMutex

	mu        sync.Mutex
	bal       map[currency.AccountID]decimal.Decimal
	held      map[currency.AccountID]decimal.Decimal
	opened    map[string][]string // by client, oldest first
	forgotten map[string]bool     // ended before a horizon Forget was given
	ended     map[string]time.Time
	forgets   int
}

func newWork(t testing.TB, open ClockedOpener, seed uint64) *work {
	c := clocktest.New(t0)
	s := open(t, c.Now)
	f := &fixture{t: t, ctx: context.Background(), s: s, l: s.Ledger()}
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 2}))
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.RevenueID(gpu, server), Currency: gpu, Kind: currency.Revenue})
	require.NoError(t, err)
	w := &work{f: f, clock: c, bal: map[currency.AccountID]decimal.Decimal{}, held: map[currency.AccountID]decimal.Decimal{},
		opened: map[string][]string{}, forgotten: map[string]bool{}, ended: map[string]time.Time{}}
	for i := range 4 {
		client := fmt.Sprint("client", i)
		w.clients = append(w.clients, client)
		f.wallet(client, "100000")
		w.bal[currency.WalletID(gpu, client)] = dectest.D("100000")
	}
	return w
}

// run makes n random moves as client number g (g's own contracts only, so
// that goroutines on other clients never race on one contract), calling
// after(rng) after each.
func (w *work) run(g, n int, rng *rand.Rand, after func(*rand.Rand)) {
	t, f := w.f.t, w.f
	client := w.clients[g]
	var wallet currency.AccountID
	rev := currency.RevenueID(gpu, server)
	var live []string
	for i := range n {
		w.gate.RLock()
		w.clock.Advance(time.Duration(rng.IntN(20)) * time.Second)
		if g == 0 && len(w.clients) > 1 && rng.IntN(3) == 0 {
			client = w.clients[rng.IntN(len(w.clients))] // sequential runs move between clients
		}
		switch k := rng.IntN(10); {
		case k < 4 || len(live) == 0:
			id := fmt.Sprintf("%s-%d-%d", w.clients[g], g, i)
			// "Newest first" is the order of acceptance: the model opens
			// under its lock, each a microsecond after the last, so that
			// workers opening at once are listed in one order by every
			// store (memstore by insertion, SQL by accepted_at, then id).
			w.mu.Lock()
			w.clock.Advance(time.Microsecond)
			c := newContract(id, client, w.clock.Now())
			_, created, err := f.s.Open(f.ctx, c, "", reserve(c, "escrow/"+id))
			if err != nil || !created {
				w.mu.Unlock()
			}
			require.NoError(t, err)
			require.True(t, created)
			wallet = currency.WalletID(gpu, client)
			w.bal[wallet] = w.bal[wallet].Sub(c.Terms.Prepayment)
			w.held[wallet] = w.held[wallet].Add(c.Terms.Prepayment)
			w.opened[client] = append(w.opened[client], id)
			w.mu.Unlock()
			live = append(live, id)
		case k < 6:
			f.run(live[rng.IntN(len(live))], w.clock.Now())
		default:
			j := rng.IntN(len(live))
			id := live[j]
			live = slices.Delete(live, j, j+1)
			charge := decimal.New(int64(rng.IntN(1001)), -2)
			void := k == 9
			c, err := f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
				if void {
					c.State, c.Reason, c.SettledAt, c.Refund = contract.StateVoided, contract.ReasonNotStarted, w.clock.Now(), c.Terms.Prepayment
					return []currency.Op{currency.Void{Key: "void/" + id, Hold: currency.HoldID(id)}}, nil
				}
				return settle(c, "settle/"+id, charge.String(), w.clock.Now()), nil
			})
			require.NoError(t, err)
			owner := currency.WalletID(gpu, c.Client)
			w.mu.Lock()
			w.held[owner] = w.held[owner].Sub(c.Terms.Prepayment)
			w.bal[owner] = w.bal[owner].Add(c.Refund)
			w.bal[rev] = w.bal[rev].Add(c.Charge)
			w.ended[id] = c.SettledAt
			w.mu.Unlock()
		}
		w.gate.RUnlock()
		after(rng)
	}
}

// forget forgets at a horizon up to a minute back, or now.
func (w *work) forget(forget Forgetter, rng *rand.Rand) {
	w.gate.Lock()
	defer w.gate.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	horizon := w.clock.Now().Add(-time.Duration(rng.IntN(60)) * time.Second)
	forget(w.f.s, horizon)
	for id, at := range w.ended {
		if at.Before(horizon) {
			w.forgotten[id] = true
		}
	}
	w.forgets++
}

// check compares the store and its ledger with the model.
func (w *work) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, f := w.f.t, w.f
	for id, bal := range w.bal {
		f.balance(id, bal.String(), w.held[id].String())
		checkStatement(t, f, id)
	}
	for _, client := range w.clients {
		want := []string{}
		for _, id := range slices.Backward(w.opened[client]) {
			if !w.forgotten[id] {
				want = append(want, id)
			}
		}
		cs, err := f.s.Contracts(f.ctx, client, 0)
		require.NoError(t, err)
		require.Equal(t, want, ids(cs), "%s's contracts", client)
		for id := range w.forgotten {
			_, err := f.s.Contract(f.ctx, id)
			require.True(t, errors.Is(err, currency.ErrForgotten), "%s: %v", id, err)
		}
	}
	f.audit()
	require.False(t, t.Failed())
}

// checkStatement requires id's statement to run from zero to its balance.
func checkStatement(t testing.TB, f *fixture, id currency.AccountID) {
	t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(t, err)
	es, err := f.l.Statement(f.ctx, id, 0, 0)
	require.NoError(t, err)
	running := decimal.Zero
	for _, e := range es {
		running = running.Add(e.Amount)
		require.True(t, running.Equal(e.Balance), "%s entry %d", id, e.Seq)
	}
	require.True(t, running.Equal(b.Available), "%s: statement ends at %s, balance %s", id, running, b.Available)
}
