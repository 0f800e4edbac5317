package natsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// treasuryOf is the treasury beside a market's store, as bourse admin
// and the exchange open it; the exchange takes its Periods.
func treasuryOf(t *testing.T, store exchange.Store) *treasury.Treasury {
	tr, err := sqltreasury.Beside(context.Background(), store.Ledger(), caps.NewPeriods(time.Now))
	require.NoError(t, err)
	return tr
}

// burst sends n offers from client at once and sorts the answers.
func burst(t *testing.T, m *market, client, tag string, n int) (made []protocol.ContractView, capped []error) {
	c := m.client(client)
	var mu sync.Mutex
	var other []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := c.Offer(context.Background(), fmt.Sprintf("%s-%d", tag, i), terms(client))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Contract != nil:
				made = append(made, *r.Contract)
			case bourse.ErrorCode(err) == bourse.ECapExceeded:
				capped = append(capped, err)
			default:
				other = append(other, fmt.Errorf("%v %+v", err, r))
			}
		})
	}
	wg.Wait()
	require.Empty(t, other)
	return made, capped
}

// TestSpendCapUnderConcurrency: alice's daily cap of 30 CRED takes five
// prepayments of 6 out of 32 offers at once, and her project's monthly cap
// of 48 leaves bob, beside her in the project, three; every other offer
// gets cap_exceeded naming its cap, with nothing escrowed. Crossing half
// of alice's cap warns her. A settlement charges the budgets what it
// charged the client and gives back the rest. The audit balances, on both
// stores.
func TestSpendCapUnderConcurrency(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		ctx := context.Background()
		tr := treasuryOf(t, store)
		m := newMarketOn(t, store, func(c *exchange.Config) {
			honest(c)
			c.SpendCaps, c.Periods = tr.SpendCaps(0), tr.Periods()
			c.ServerLostAfter = time.Minute // the contracts stay running, silent, until the test ends them
		})
		for _, a := range []struct{ owner, parent string }{{"acme", ""}, {"acme.ml", "acme"}, {"alice", "acme.ml"}, {"bob", "acme.ml"}} {
			_, err := tr.Open(ctx, "root", cred, a.owner, a.parent, "open-"+a.owner)
			require.NoError(t, err)
		}
		for _, who := range []string{"alice", "bob"} {
			_, err := tr.Grant(ctx, "root", cred, who, dectest.D("1000"), "grant-"+who, "")
			require.NoError(t, err)
		}
		_, err := tr.SetSpendCap(ctx, "root", "alice", cred, caps.Day, dectest.D("30"), dectest.D("0.5"), "cap-alice")
		require.NoError(t, err)
		_, err = tr.SetSpendCap(ctx, "root", "acme.ml", cred, caps.Month, dectest.D("48"), dectest.D("0"), "cap-ml")
		require.NoError(t, err)
		srv := m.scriptedServer("gpu1", 64, accept)

		nc := natstest.Connect(t, m.ns, "")
		var warnings atomic.Int32
		_, err = nc.Subscribe("bourse.v1.deliver.alice.event", func(msg *nats.Msg) {
			var ev protocol.Event
			if json.Unmarshal(msg.Data, &ev) == nil && ev.Type == protocol.EventSpendWarning {
				assert.Contains(t, ev.Warning, "day spend cap of alice")
				warnings.Add(1)
			}
		})
		require.NoError(t, err)

		made, capped := burst(t, m, "alice", "a", 32)
		require.Len(t, made, 5, "alice's daily cap")
		assert.Len(t, capped, 27)
		assert.Contains(t, capped[0].Error(), "day spend cap of alice: 30 of 30 CRED charged or held this day")
		bal := m.balance(currency.WalletID(cred, "alice"))
		assert.True(t, bal.Held.Equal(dectest.D("30")), "five prepayments held: %s", bal.Held)
		waitFor(t, "the warning", func() bool { return warnings.Load() >= 1 })

		bobs, capped := burst(t, m, "bob", "b", 32)
		require.Len(t, bobs, 3, "the project's 48 less alice's 30")
		assert.Contains(t, capped[0].Error(), "month spend cap of acme.ml: 48 of 48 CRED")
		m.audit()

		c := made[0]
		waitFor(t, "the start", func() bool { return m.contract(c.ID).State == contract.StateRunning })
		srv.publish(reading(c.ID, 1, "50", 1, true))
		done := m.settled(c.ID, 5*time.Second)
		require.True(t, done.Charge.IsPositive())
		uses, err := tr.SpendUses(ctx)
		require.NoError(t, err)
		for _, u := range uses {
			switch u.Owner {
			case "alice":
				assert.True(t, u.Used.Equal(dectest.D("24").Add(done.Charge)), "alice: 4 held and the charge, got %s", u.Used)
				assert.True(t, u.Held.Equal(dectest.D("24")), "alice held %s", u.Held)
			case "acme.ml":
				assert.True(t, u.Used.Equal(dectest.D("42").Add(done.Charge)), "acme.ml: 7 held and the charge, got %s", u.Used)
			}
		}
		spent := m.balance(caps.SpentID(cred))
		assert.True(t, spent.Available.Equal(done.Charge.Mul(dectest.D("2"))), "the charge, from both budgets: %s", spent.Available)

		// Raising alice's cap gives today's budget the difference at once.
		_, err = tr.SetSpendCap(ctx, "root", "alice", cred, caps.Day, dectest.D("60"), dectest.D("0.5"), "cap-alice-2")
		require.NoError(t, err)
		budget := m.balance(caps.BudgetWallet("alice", cred, caps.Day, time.Now()))
		assert.True(t, budget.Available.Equal(dectest.D("36").Sub(done.Charge)), "60 less 24 held and the charge: %s", budget.Available)
		more, capped := burst(t, m, "alice", "c", 4)
		assert.Empty(t, more, "the project's cap is the one in the way now")
		assert.Contains(t, capped[0].Error(), "month spend cap of acme.ml")
		m.audit()
	})
}

// TestProjectGPUCap: a project capped at 3 GPUs lets its two clients,
// offering 16 times each at once, hold 3 between them; the client's own
// cap still counts too; ending a contract frees its GPU on both caps.
func TestProjectGPUCap(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		ctx := context.Background()
		tr := treasuryOf(t, store)
		m := newMarketOn(t, store, func(c *exchange.Config) { honest(c); c.ServerLostAfter = time.Minute })
		for _, a := range []struct{ owner, parent string }{{"acme", ""}, {"acme.ml", "acme"}, {"alice", "acme.ml"}, {"bob", "acme.ml"}} {
			_, err := tr.Open(ctx, "root", cred, a.owner, a.parent, "open-"+a.owner)
			require.NoError(t, err)
		}
		for _, who := range []string{"alice", "bob"} {
			_, err := tr.Grant(ctx, "root", cred, who, dectest.D("1000"), "grant-"+who, "")
			require.NoError(t, err)
		}
		_, err := tr.SetCap(ctx, "root", "acme.ml", 3, "cap-ml")
		require.NoError(t, err)
		_, err = tr.SetCap(ctx, "root", "alice", 1, "cap-alice")
		require.NoError(t, err)
		srv := m.scriptedServer("gpu1", 64, accept)

		var mu sync.Mutex
		var made []protocol.ContractView
		var capped []error
		var wg sync.WaitGroup
		for _, who := range []string{"alice", "bob"} {
			wg.Go(func() {
				ms, cs := burst(t, m, who, who, 16)
				mu.Lock()
				made, capped = append(made, ms...), append(capped, cs...)
				mu.Unlock()
			})
		}
		wg.Wait()
		require.Len(t, made, 3, "the project's cap")
		assert.Len(t, capped, 29)
		byClient := map[string]int{}
		for _, c := range made {
			byClient[c.Client]++
			want := []string{"gpus/" + c.ID + "/acme.ml"} // the project's cap
			if c.Client == "alice" {
				want = append([]string{"gpus/" + c.ID}, want...) // her own first
			}
			assert.Equal(t, want, m.contract(c.ID).CapHolds)
		}
		assert.LessOrEqual(t, byClient["alice"], 1, "alice's own cap")
		ml := m.balance(caps.GPUWallet("acme.ml"))
		assert.True(t, ml.Held.Equal(dectest.D("3")) && ml.Available.IsZero(), "%+v", ml)
		m.audit()

		c := made[0]
		waitFor(t, "the start", func() bool { return m.contract(c.ID).State == contract.StateRunning })
		srv.publish(reading(c.ID, 1, "0.5", 1, true))
		m.settled(c.ID, 5*time.Second)
		ml = m.balance(caps.GPUWallet("acme.ml"))
		assert.True(t, ml.Held.Equal(dectest.D("2")) && ml.Available.Equal(dectest.D("1")), "one GPU back on the project's cap: %+v", ml)
		_, err = m.client("bob").Offer(ctx, "after", terms("bob"))
		require.NoError(t, err)
		_, err = m.client("bob").Offer(ctx, "past", terms("bob"))
		assert.Contains(t, err.Error(), "concurrent-GPU cap of acme.ml: 3 of 3 GPUs in use")
		m.audit()
	})
}

// TestSpendRateUnderConcurrency: a bucket of 12 takes two prepayments of
// 6 out of 32 offers at once; the refill the treasury runs lets one more
// through once the time for it has passed.
func TestSpendRateUnderConcurrency(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		ctx := context.Background()
		tr := treasuryOf(t, store)
		m := newMarketOn(t, store, func(c *exchange.Config) {
			honest(c)
			c.SpendCaps, c.Periods = tr.SpendCaps(0), tr.Periods()
			c.ServerLostAfter = time.Minute
		})
		_, err := tr.Open(ctx, "root", cred, "alice", "", "open-alice")
		require.NoError(t, err)
		_, err = tr.Grant(ctx, "root", cred, "alice", dectest.D("1000"), "grant-alice", "")
		require.NoError(t, err)
		_, err = tr.SetSpendRate(ctx, "root", "alice", cred, dectest.D("12"), dectest.D("60"), dectest.D("0"), "rate-alice")
		require.NoError(t, err)
		m.scriptedServer("gpu1", 64, accept)

		made, capped := burst(t, m, "alice", "a", 32)
		require.Len(t, made, 2, "the bucket's capacity")
		assert.Contains(t, capped[0].Error(), "spend rate of alice: 0 of its 12 CRED left")
		m.audit()

		// Six minutes at 60 an hour is 6: one more prepayment.
		rs, err := tr.SpendRates(ctx)
		require.NoError(t, err)
		_, err = tr.RunSpendRates(ctx, "exchange", time.Unix(0, (rs[0].Refilled+6)*int64(time.Minute)))
		require.NoError(t, err)
		more, _ := burst(t, m, "alice", "b", 4)
		assert.Len(t, more, 1, "the refill")
		m.audit()
	})
}

// TestSpendCapChangedBeforeItsPeriod: the exchange caches caps (an hour
// here), but a period's budget is minted with the limit read afresh, so a
// cap raised before its period's first offer is the one that period gets.
func TestSpendCapChangedBeforeItsPeriod(t *testing.T) {
	ctx := context.Background()
	store := memstore.New(mem.New(mem.Options{}))
	tr := treasuryOf(t, store)
	m := newMarketOn(t, store, func(c *exchange.Config) {
		honest(c)
		c.SpendCaps, c.Periods = tr.SpendCaps(time.Hour), tr.Periods()
		c.ServerLostAfter = time.Minute
	})
	for _, who := range []string{"alice", "bob"} {
		_, err := tr.Open(ctx, "root", cred, who, "", "open-"+who)
		require.NoError(t, err)
		_, err = tr.Grant(ctx, "root", cred, who, dectest.D("1000"), "grant-"+who, "")
		require.NoError(t, err)
	}
	_, err := tr.SetSpendCap(ctx, "root", "bob", cred, caps.Day, dectest.D("12"), dectest.D("0"), "cap-bob-1")
	require.NoError(t, err)
	m.scriptedServer("gpu1", 64, accept)
	made, _ := burst(t, m, "alice", "warm", 1) // the exchange reads the caps: bob's is 12
	require.Len(t, made, 1)
	_, err = tr.SetSpendCap(ctx, "root", "bob", cred, caps.Day, dectest.D("24"), dectest.D("0"), "cap-bob-2")
	require.NoError(t, err)
	made, _ = burst(t, m, "bob", "b", 8)
	assert.Len(t, made, 4, "24 of prepayments of 6, not 12")
	m.audit()
}
