package ledgertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// ConcurrentConfig sizes RunConcurrent; zero values take the defaults.
type ConcurrentConfig struct {
	Workers int   // goroutines, default 32
	Ops     int   // operations per goroutine, default 150
	Seed    int64 // default 1
}

// RunConcurrent drives a ledger from many goroutines with random mints,
// transfers, holds, captures, voids and expiries, some in batches, while the
// clock moves; every so often an operation is sent again with the same key,
// from its own goroutine or another. Then it audits the ledger and, like
// TigerBeetle's auditor, rebuilds every balance from the replies and
// compares.
func RunConcurrent(t *testing.T, open Opener, cfg ConcurrentConfig) {
	if cfg.Workers == 0 {
		cfg.Workers = 32
	}
	if cfg.Ops == 0 {
		cfg.Ops = 150
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	f := newFixture(t, open)
	w := &workload{f: f, results: map[string]currency.Result{}, holds: map[currency.HoldID]decimal.Decimal{}}
	for i := range 8 {
		w.wallets = append(w.wallets, f.wallet(fmt.Sprintf("w%d", i)))
		f.mint(fmt.Sprintf("seed-%d", i), w.wallets[i], "1000")
	}
	for i := range 3 {
		w.revenues = append(w.revenues, f.revenue(fmt.Sprintf("s%d", i)))
	}

	var wg sync.WaitGroup
	errs := make(chan error, cfg.Workers)
	for g := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(g)))
			if err := w.run(g, cfg.Ops, rng); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rep := f.audit()
	t.Logf("%s; %d replays, %d infrastructure retries", rep, w.replays, w.infraRetries)
	w.check(t)
}

type workload struct {
	f        *fixture
	wallets  []currency.AccountID
	revenues []currency.AccountID

	mu           sync.Mutex
	sent         []currency.Op // every op sent, for replays from any goroutine
	results      map[string]currency.Result
	holds        map[currency.HoldID]decimal.Decimal // reserved, by amount
	holdIDs      []currency.HoldID
	replays      int
	infraRetries int
	mismatch     []string
}

func (w *workload) run(g, n int, rng *rand.Rand) error {
	for i := 0; i < n; {
		batch := 1
		if rng.IntN(5) == 0 {
			batch = 2 + rng.IntN(3)
		}
		var ops []currency.Op
		for j := 0; j < batch && i < n; j, i = j+1, i+1 {
			ops = append(ops, w.randomOp(fmt.Sprintf("g%d-%d", g, i), rng))
		}
		if g == 0 && rng.IntN(4) == 0 {
			w.f.clock.Advance(time.Duration(rng.IntN(90)) * time.Second)
		}
		if err := w.apply(ops); err != nil {
			return err
		}
	}
	return nil
}

func (w *workload) randomOp(key string, rng *rand.Rand) currency.Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.sent) > 0 && rng.IntN(5) == 0 {
		w.replays++
		return w.sent[rng.IntN(len(w.sent))]
	}
	amount := decimal.New(int64(1+rng.IntN(5000)), -2) // 0.01 .. 50.00
	wallet := w.wallets[rng.IntN(len(w.wallets))]
	var hold currency.HoldID
	if len(w.holdIDs) > 0 {
		hold = w.holdIDs[rng.IntN(len(w.holdIDs))]
	}
	var op currency.Op
	switch k := rng.IntN(10); {
	case k == 0:
		op = currency.Transfer{Key: key, From: currency.IssuanceID(gpu), To: wallet, Amount: amount.Mul(decimal.NewFromInt(4))}
	case k <= 2:
		to := w.wallets[rng.IntN(len(w.wallets))]
		if rng.IntN(2) == 0 {
			to = w.revenues[rng.IntN(len(w.revenues))]
		}
		op = currency.Transfer{Key: key, From: wallet, To: to, Amount: amount}
	case k <= 5 || hold == "":
		id := currency.HoldID("h-" + key)
		deadline := w.f.clock.Now().Add(time.Duration(rng.IntN(600)-60) * time.Second)
		op = currency.Reserve{Key: key, Hold: id, From: wallet, Amount: amount, Deadline: deadline}
		w.holdIDs = append(w.holdIDs, id)
	case k <= 7:
		capture := decimal.New(int64(rng.IntN(5001)), -2)
		op = currency.Capture{Key: key, Hold: hold, To: w.revenues[rng.IntN(len(w.revenues))], Amount: capture}
	case k == 8:
		op = currency.Void{Key: key, Hold: hold}
	default:
		op = currency.Expire{Key: key, Hold: hold}
	}
	w.sent = append(w.sent, op)
	return op
}

// apply sends ops until the ledger answers (infrastructure errors are
// retried with the same keys, as a client would) and checks each reply
// against the first reply for its key.
func (w *workload) apply(ops []currency.Op) error {
	var rs []currency.Result
	var err error
	for attempt := 0; ; attempt++ {
		rs, err = w.f.l.Apply(context.Background(), ops...)
		if err == nil {
			break
		}
		if attempt == 20 {
			return fmt.Errorf("apply %d ops: %w", len(ops), err)
		}
		w.mu.Lock()
		w.infraRetries++
		w.mu.Unlock()
	}
	if len(rs) != len(ops) {
		return fmt.Errorf("apply: %d results for %d ops", len(rs), len(ops))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, r := range rs {
		key := ops[i].IdempotencyKey()
		first, seen := w.results[key]
		if !seen {
			w.results[key] = r
			if res, ok := ops[i].(currency.Reserve); ok && r.Err == nil {
				w.holds[res.Hold] = res.Amount
			}
			continue
		}
		if d := sameResult(first, r); d != "" {
			w.mismatch = append(w.mismatch, key+": "+d)
		}
	}
	return nil
}

func sameResult(a, b currency.Result) string {
	if (a.Err == nil) != (b.Err == nil) || (a.Err != nil && a.Err.Code != b.Err.Code) {
		return fmt.Sprintf("error %v then %v", a.Err, b.Err)
	}
	if len(a.Movements) != len(b.Movements) {
		return fmt.Sprintf("%d movements then %d", len(a.Movements), len(b.Movements))
	}
	for i := range a.Movements {
		x, y := a.Movements[i], b.Movements[i]
		if x.ID != y.ID || !x.Amount.Equal(y.Amount) || x.From != y.From || x.To != y.To {
			return fmt.Sprintf("movement %d: %+v then %+v", i, x, y)
		}
	}
	return ""
}

// check rebuilds balances, held sums and hold outcomes from the first reply
// of every key and compares them with what the ledger says.
func (w *workload) check(t *testing.T) {
	assert.Empty(t, w.mismatch, "a replayed key answered differently")
	ctx := context.Background()
	want := map[currency.AccountID]decimal.Decimal{}
	resolved := map[currency.HoldID]int{}
	for _, r := range w.results {
		for _, m := range r.Movements {
			want[m.From] = want[m.From].Sub(m.Amount)
			want[m.To] = want[m.To].Add(m.Amount)
		}
		if r.Err == nil && r.Hold != nil && r.Hold.Status != currency.HoldOpen {
			resolved[r.Hold.ID]++
		}
	}
	// The seed mints went through the fixture, not the workload.
	for i, id := range w.wallets {
		_ = i
		want[id] = want[id].Add(dectest.D("1000"))
		want[currency.IssuanceID(gpu)] = want[currency.IssuanceID(gpu)].Sub(dectest.D("1000"))
	}
	held := map[currency.AccountID]decimal.Decimal{}
	for id, amount := range w.holds {
		assert.LessOrEqual(t, resolved[id], 1, "hold %s resolved %d times", id, resolved[id])
		h, err := w.f.l.Hold(ctx, id)
		require.NoError(t, err)
		assert.True(t, h.Amount.Equal(amount))
		if h.Status == currency.HoldOpen {
			held[h.From] = held[h.From].Add(h.Amount)
			assert.Zero(t, resolved[id], "hold %s open but a resolution succeeded", id)
		} else {
			assert.Equal(t, 1, resolved[id], "hold %s is %s but no reply said so", id, h.Status)
		}
	}
	for id, bal := range want {
		b, err := w.f.l.Balance(ctx, id)
		require.NoError(t, err)
		assert.True(t, b.Available.Equal(bal), "%s: ledger says %s, replies add up to %s", id, b.Available, bal)
		if b.Account != currency.IssuanceID(gpu) {
			assert.True(t, b.Held.Equal(held[id]), "%s held: ledger says %s, replies add up to %s", id, b.Held, held[id])
		}
	}
}
