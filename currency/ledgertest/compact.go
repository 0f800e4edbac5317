package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/quick"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// Compactor forgets what finished before `before` in l, as
// mem.Ledger.Compact does; a backend that compacts passes one to
// RunCompaction.
type Compactor func(l currency.Ledger, before time.Time)

// RunCompaction checks that compacting a ledger changes nothing it
// answers for: random workloads (grants, transfers, reserves, captures,
// voids, expiries, replays of old keys) compacted at random points must
// keep every balance and held sum equal to a model rebuilt from the first
// replies, keep the audit clean, keep statements ending at the balance,
// refuse (never reapply) a key whose result was forgotten, and end with
// the same balances as the same workload never compacted.
func RunCompaction(t *testing.T, open Opener, compact Compactor) {
	t.Run("Forgotten", func(t *testing.T) { testForgotten(t, open, compact) })
	t.Run("Statement", func(t *testing.T) { testCompactedStatement(t, open, compact) })
	t.Run("Random", func(t *testing.T) {
		for seed := range uint64(4) {
			m := newModel(t, open, seed)
			m.run(1500, 0.02, compact)
			m.check()
			assert.Positive(t, m.forgottenReplays+m.replays, "replays")
			t.Logf("seed %d: %d ops, %d compactions, %d replays of which %d forgotten", seed, m.ops, m.compactions, m.replays, m.forgottenReplays)
		}
	})
	t.Run("SameBalances", func(t *testing.T) {
		// Compaction at any points gives the final balances of none.
		prop := func(seed uint64, rate uint8) bool {
			plain := newModel(t, open, seed)
			plain.run(600, 0, nil)
			squeezed := newModel(t, open, seed)
			squeezed.run(600, float64(rate%64+1)/256, compact)
			squeezed.check()
			a, b := plain.balances(), squeezed.balances()
			if !maps.EqualFunc(a, b, func(x, y [2]decimal.Decimal) bool { return x[0].Equal(y[0]) && x[1].Equal(y[1]) }) {
				t.Logf("seed %d rate %d: %v vs %v", seed, rate, a, b)
				return false
			}
			return slices.Equal(plain.codes, squeezed.codes)
		}
		require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 12, Rand: nil}))
	})
	t.Run("Concurrent", func(t *testing.T) { testCompactConcurrent(t, open, compact) })
}

// testForgotten: what a compacted key or hold answers.
func testForgotten(t *testing.T, open Opener, compact Compactor) {
	f := newFixture(t, open)
	alice, srv := f.wallet("alice"), f.revenue("srv")
	f.mint("m1", alice, "10")
	f.ok(currency.Reserve{Key: "r1", Hold: "h1", From: alice, Amount: dectest.D("4"), Deadline: f.clock.Now().Add(time.Hour)})
	f.ok(currency.Reserve{Key: "r2", Hold: "h2", From: alice, Amount: dectest.D("2"), Deadline: f.clock.Now().Add(time.Hour)})
	f.ok(currency.Capture{Key: "c1", Hold: "h1", To: srv, Amount: dectest.D("1")})
	f.clock.Advance(time.Minute)
	compact(f.l, f.clock.Now())
	f.balance(alice, "7", "2")
	f.balance(srv, "1", "0")
	f.audit()

	// The replay of a forgotten key is refused, the same op or another.
	for _, op := range []currency.Op{
		currency.Transfer{Key: "m1", From: currency.IssuanceID(gpu), To: alice, Amount: dectest.D("10")},
		currency.Capture{Key: "c1", Hold: "h1", To: srv, Amount: dectest.D("1")},
		currency.Void{Key: "c1", Hold: "h2"},
	} {
		r := f.fails(op, bourse.EIdempotencyConflict)
		assert.ErrorIs(t, r.Err, currency.ErrForgotten)
	}
	// A reserve of an open hold keeps its answer.
	r := f.ok(currency.Reserve{Key: "r2", Hold: "h2", From: alice, Amount: dectest.D("2"), Deadline: f.clock.Now().Add(time.Hour).Add(-time.Minute)})
	require.Len(t, r.Movements, 1)
	// A forgotten hold stays resolved under new keys.
	f.fails(currency.Reserve{Key: "r1-again", Hold: "h1", From: alice, Amount: dectest.D("1"), Deadline: f.clock.Now().Add(time.Hour)}, bourse.EConflict)
	f.fails(currency.Capture{Key: "c1-again", Hold: "h1", To: srv, Amount: dectest.D("1")}, bourse.EHoldResolved)
	f.fails(currency.Void{Key: "v1", Hold: "h1"}, bourse.EHoldResolved)
	f.fails(currency.Expire{Key: "x1", Hold: "h1"}, bourse.EHoldResolved)
	_, err := f.l.Hold(f.ctx, "h1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	assert.ErrorIs(t, err, currency.ErrForgotten)
	h, err := f.l.Hold(f.ctx, "h2")
	require.NoError(t, err)
	assert.Equal(t, currency.HoldOpen, h.Status)
	f.balance(alice, "7", "2")
	f.ok(currency.Void{Key: "v2", Hold: "h2"})
	f.balance(alice, "9", "0")
	f.audit()
}

// testCompactedStatement: a compacted statement opens with the carried
// figure, numbers its entries as before and pages across the line.
func testCompactedStatement(t *testing.T, open Opener, compact Compactor) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	f.mint("m1", alice, "10")
	f.ok(currency.Transfer{Key: "p1", From: alice, To: bob, Amount: dectest.D("3")})
	f.ok(currency.Reserve{Key: "r1", Hold: "h1", From: alice, Amount: dectest.D("4"), Deadline: f.clock.Now().Add(time.Hour)})
	f.ok(currency.Transfer{Key: "p2", From: alice, To: bob, Amount: dectest.D("1")})
	f.clock.Advance(time.Second)
	compact(f.l, f.clock.Now())
	// h1 is open: alice keeps r1 and everything after it.
	es, err := f.l.Statement(f.ctx, alice, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 3)
	assert.Equal(t, currency.CarriedForward, es[0].Movement)
	assert.Equal(t, int64(2), es[0].Seq)
	assert.True(t, es[0].Balance.Equal(dectest.D("7")) && es[0].Amount.Equal(dectest.D("7")), "%+v", es[0])
	assert.Equal(t, []int64{3, 4}, []int64{es[1].Seq, es[2].Seq})
	assert.True(t, es[2].Balance.Equal(dectest.D("2")))

	f.ok(currency.Capture{Key: "c1", Hold: "h1", To: bob, Amount: dectest.D("1")})
	f.clock.Advance(time.Second)
	compact(f.l, f.clock.Now())
	es, err = f.l.Statement(f.ctx, alice, 0, 0)
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, currency.Entry{Account: alice, Seq: 5, Movement: currency.CarriedForward, Amount: dectest.D("5"), Balance: dectest.D("5"),
		At: es[0].At, Memo: es[0].Memo}, es[0])
	f.ok(currency.Transfer{Key: "p3", From: alice, To: bob, Amount: dectest.D("2")})
	page, err := f.l.Statement(f.ctx, alice, 5, 10)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, int64(6), page[0].Seq)
	assert.True(t, page[0].Balance.Equal(dectest.D("3")))
	page, err = f.l.Statement(f.ctx, alice, 2, 1)
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, currency.CarriedForward, page[0].Movement)
	f.balance(bob, "7", "0")
	checkStatement(t, f, bob)
	f.audit()
}

// model drives one ledger with a seeded random workload and rebuilds
// what it must hold from the first reply to each key.
type model struct {
	t   testing.TB
	f   *fixture
	rng *rand.Rand // the ops
	cut *rand.Rand // when and where to compact, apart so that ops are the same either way

	mu       sync.Mutex
	accounts []currency.AccountID
	wallets  []currency.AccountID
	revenues []currency.AccountID
	sent     []currency.Op
	first    map[string]currency.Result
	bal      map[currency.AccountID]decimal.Decimal
	reserved map[currency.HoldID]currency.Reserve // holds made
	resolved map[currency.HoldID]bool             // and resolved, in whatever order the replies come
	holds    []currency.HoldID
	// codes are the first replies' error codes, in order.
	codes []bourse.Code

	ops, compactions, replays, forgottenReplays int
}

func newModel(t testing.TB, open Opener, seed uint64) *model {
	f := newFixture(t, open)
	m := &model{t: t, f: f, rng: rand.New(rand.NewPCG(seed, 7)), cut: rand.New(rand.NewPCG(seed, 8)), first: map[string]currency.Result{},
		bal:      map[currency.AccountID]decimal.Decimal{},
		reserved: map[currency.HoldID]currency.Reserve{}, resolved: map[currency.HoldID]bool{}}
	m.accounts = append(m.accounts, currency.IssuanceID(gpu))
	for i := range 6 {
		m.wallets = append(m.wallets, f.wallet(fmt.Sprint("w", i)))
	}
	for i := range 2 {
		m.revenues = append(m.revenues, f.revenue(fmt.Sprint("s", i)))
	}
	m.accounts = append(m.accounts, m.wallets...)
	m.accounts = append(m.accounts, m.revenues...)
	return m
}

// run applies n random ops, compacting with probability rate after each
// (at a horizon up to five minutes back) and checking the ledger then.
func (m *model) run(n int, rate float64, compact Compactor) {
	for i := range n {
		m.step(fmt.Sprint("k", i), m.rng)
		if compact != nil && m.cut.Float64() < rate {
			m.compact(compact, m.cut)
			m.check()
		}
	}
}

func (m *model) compact(compact Compactor, rng *rand.Rand) {
	lag := time.Duration(rng.IntN(300)) * time.Second
	if rng.IntN(4) == 0 {
		lag = -time.Second // everything finished
	}
	compact(m.f.l, m.f.clock.Now().Add(-lag))
	m.mu.Lock()
	m.compactions++
	m.mu.Unlock()
}

// step makes and applies one op. Safe for concurrent use with its own rng.
func (m *model) step(key string, rng *rand.Rand) {
	op := m.next(key, rng)
	rs, err := m.f.l.Apply(context.Background(), op)
	require.NoError(m.t, err)
	m.record(op, rs[0])
}

func (m *model) next(key string, rng *rand.Rand) currency.Op {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops++
	if rng.IntN(3) == 0 {
		m.f.clock.Advance(time.Duration(rng.IntN(30)) * time.Second)
	}
	if len(m.sent) > 0 && rng.IntN(10) == 0 {
		return m.sent[rng.IntN(len(m.sent))]
	}
	amount := decimal.New(int64(1+rng.IntN(5000)), -2)
	wallet := m.wallets[rng.IntN(len(m.wallets))]
	var hold currency.HoldID
	if len(m.holds) > 0 {
		hold = m.holds[rng.IntN(len(m.holds))]
	}
	var op currency.Op
	switch k := rng.IntN(20); {
	case k < 2:
		op = currency.Grant(gpu, string(wallet[len("wallet/GPU/"):]), amount.Mul(decimal.NewFromInt(8)), key, "grant")
	case k < 6:
		to := m.wallets[rng.IntN(len(m.wallets))]
		if rng.IntN(2) == 0 {
			to = m.revenues[rng.IntN(len(m.revenues))]
		}
		op = currency.Transfer{Key: key, From: wallet, To: to, Amount: amount}
	case k < 12 || hold == "":
		id := currency.HoldID("h-" + key)
		op = currency.Reserve{Key: key, Hold: id, From: wallet, Amount: amount,
			Deadline: m.f.clock.Now().Add(time.Duration(rng.IntN(600)-60) * time.Second)}
		m.holds = append(m.holds, id)
	case k < 16:
		op = currency.Capture{Key: key, Hold: hold, To: m.revenues[rng.IntN(len(m.revenues))], Amount: decimal.New(int64(rng.IntN(5001)), -2)}
	case k < 18:
		op = currency.Void{Key: key, Hold: hold, Memo: "void"}
	default:
		op = currency.Expire{Key: key, Hold: hold}
	}
	m.sent = append(m.sent, op)
	return op
}

func (m *model) record(op currency.Op, r currency.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := op.IdempotencyKey()
	// A key's result compacted away answers only a replay, never the
	// first apply; but under concurrency the replay's record can come
	// before the first's (another worker took the op from m.sent and the
	// ledger answered it after a compaction), so it is counted here and
	// never taken for the first result.
	if r.Err != nil && errors.Is(r.Err, currency.ErrForgotten) {
		require.Equal(m.t, bourse.EIdempotencyConflict, r.Err.Code)
		m.replays++
		m.forgottenReplays++
		return
	}
	if first, ok := m.first[key]; ok {
		m.replays++
		require.Empty(m.t, sameResult(first, r), "replay of %s", key)
		return
	}
	m.first[key] = r
	var code bourse.Code
	if r.Err != nil {
		code = r.Err.Code
	}
	m.codes = append(m.codes, code)
	for _, mv := range r.Movements {
		m.bal[mv.From] = m.bal[mv.From].Sub(mv.Amount)
		m.bal[mv.To] = m.bal[mv.To].Add(mv.Amount)
	}
	if r.Err != nil || r.Hold == nil {
		return
	}
	if res, ok := op.(currency.Reserve); ok {
		m.reserved[res.Hold] = res
	} else {
		require.False(m.t, m.resolved[r.Hold.ID], "hold %s resolved twice", r.Hold.ID)
		m.resolved[r.Hold.ID] = true
	}
}

// balances are each account's available and held amounts, by the ledger.
func (m *model) balances() map[currency.AccountID][2]decimal.Decimal {
	out := map[currency.AccountID][2]decimal.Decimal{}
	for _, id := range m.accounts {
		b, err := m.f.l.Balance(m.f.ctx, id)
		require.NoError(m.t, err)
		out[id] = [2]decimal.Decimal{b.Available, b.Held}
	}
	return out
}

// check compares the ledger with the model, audits it and reads every
// statement through.
func (m *model) check() {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := map[currency.AccountID]decimal.Decimal{}
	open := map[currency.HoldID]currency.Reserve{}
	for id, r := range m.reserved {
		if !m.resolved[id] {
			held[r.From] = held[r.From].Add(r.Amount)
			open[id] = r
		}
	}
	for id, b := range m.balances() {
		require.True(m.t, b[0].Equal(m.bal[id]), "%s: ledger says %s, replies add up to %s", id, b[0], m.bal[id])
		if id != currency.IssuanceID(gpu) {
			require.True(m.t, b[1].Equal(held[id]), "%s held: ledger says %s, model %s", id, b[1], held[id])
		}
		checkStatement(m.t, m.f, id)
	}
	for id, r := range open {
		h, err := m.f.l.Hold(m.f.ctx, id)
		require.NoError(m.t, err)
		require.True(m.t, h.Status == currency.HoldOpen && h.Amount.Equal(r.Amount), "%+v", h)
	}
	m.f.audit()
}

// checkStatement reads id's statement in pages: it opens with at most one
// carried-forward line, its Seqs follow each other, its running balances
// follow from zero and end at the balance.
func checkStatement(t testing.TB, f *fixture, id currency.AccountID) {
	t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(t, err)
	running, after := decimal.Zero, int64(0)
	for {
		page, err := f.l.Statement(f.ctx, id, after, 7)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if e.Movement == currency.CarriedForward {
				require.Zero(t, after, "%s: a carried-forward line after entry %d", id, after)
			} else {
				require.Equal(t, after+1, e.Seq, "%s", id)
			}
			running = running.Add(e.Amount)
			require.True(t, running.Equal(e.Balance), "%s entry %d: running %s, says %s", id, e.Seq, running, e.Balance)
			after = e.Seq
		}
	}
	require.True(t, running.Equal(b.Available), "%s: statement ends at %s, balance %s", id, running, b.Available)
}

// testCompactConcurrent: workers apply random ops while another goroutine
// compacts; the replies, the audit and the statements must agree after.
func testCompactConcurrent(t *testing.T, open Opener, compact Compactor) {
	m := newModel(t, open, 99)
	// Endow every wallet, so that most ops succeed.
	for i, w := range m.wallets {
		op := currency.Grant(gpu, string(w[len("wallet/GPU/"):]), dectest.D("500"), fmt.Sprint("seed", i), "")
		rs, err := m.f.l.Apply(m.f.ctx, op)
		require.NoError(t, err)
		m.record(op, rs[0])
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(5, 5))
		for {
			select {
			case <-stop:
				return
			default:
				m.compact(compact, rng)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range 400 {
				m.step(fmt.Sprintf("g%d-%d", g, i), rng)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-done
	m.check()
	m.compact(compact, rand.New(rand.NewPCG(1, 1)))
	m.check()
	t.Logf("%d ops, %d compactions, %d replays of which %d forgotten", m.ops, m.compactions, m.replays, m.forgottenReplays)
}
