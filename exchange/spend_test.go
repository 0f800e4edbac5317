package exchange_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// The spend caps and spend rates at an offer and at the settlement, on a
// manual clock, with offers at once from many goroutines.

// tenMinutes is a one-GPU offer at 0.01 a GPU-second for up to ten
// minutes, prepaid in full: 6.
func tenMinutes() contract.Terms {
	tm := job(1, "0.01")
	tm.TimeLimit, tm.Prepayment = 10*time.Minute, dectest.D("6")
	return tm
}

// spendCaps is the treasury beside the harness's ledger, its periods on
// the harness's clock, as bourse admin and the exchange open it; with
// ttl not negative, the harness's House takes its spend caps (cached for
// ttl) and periods.
func spendCaps(t *testing.T, h *housetest.Harness, ttl time.Duration) *treasury.Treasury {
	t.Helper()
	tr, err := sqltreasury.Beside(context.Background(), h.Ledger, caps.NewPeriods(h.Clock.Now))
	require.NoError(t, err)
	if ttl >= 0 {
		h.Configure(func(c *exchange.Config) { c.SpendCaps, c.Periods = tr.SpendCaps(ttl), tr.Periods() })
	}
	return tr
}

// openAll opens the owners, each under its parent ("" for none), and
// grants each of clients 1000.
func openAll(t *testing.T, tr *treasury.Treasury, owners [][2]string, clients ...string) {
	t.Helper()
	ctx := context.Background()
	for _, a := range owners {
		_, err := tr.Open(ctx, "root", housetest.Currency, a[0], a[1], "open-"+a[0])
		require.NoError(t, err)
	}
	for _, who := range clients {
		_, err := tr.Grant(ctx, "root", housetest.Currency, who, dectest.D("1000"), "grant-"+who, "")
		require.NoError(t, err)
	}
}

// acme is an organisation with a project of two clients.
var acme = [][2]string{{"acme", ""}, {"acme.ml", "acme"}, {"alice", "acme.ml"}, {"bob", "acme.ml"}}

// TestSpendCapUnderConcurrency: alice's daily cap of 30 CRED takes five
// prepayments of 6 out of 32 offers at once, and her project's monthly cap
// of 48 leaves bob, beside her in the project, three; every other offer
// gets cap_exceeded naming its cap, with nothing escrowed. Crossing half
// of alice's cap warns her. A settlement charges the budgets what it
// charged the client and gives back the rest. The audit balances, on both
// stores.
func TestSpendCapUnderConcurrency(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		tr := spendCaps(t, h, 0)
		openAll(t, tr, acme, "alice", "bob")
		_, err := tr.SetSpendCap(ctx, "root", "alice", housetest.Currency, caps.Day, dectest.D("30"), dectest.D("0.5"), "cap-alice")
		require.NoError(t, err)
		_, err = tr.SetSpendCap(ctx, "root", "acme.ml", housetest.Currency, caps.Month, dectest.D("48"), dectest.D("0"), "cap-ml")
		require.NoError(t, err)
		h.Server("gpu1", "H100", 64, nil)

		made, capped := burst(t, h, "alice", "a", 32, tenMinutes())
		require.Len(t, made, 5, "alice's daily cap")
		assert.Len(t, capped, 27)
		assert.Contains(t, capped[0].Error(), "day spend cap of alice: 30.00 of 30.00 CRED charged or held this day")
		bal := h.Balance(currency.WalletID(housetest.Currency, "alice"))
		assert.True(t, bal.Held.Equal(dectest.D("30")), "five prepayments held: %s", bal.Held)
		warnings := 0
		for _, ev := range h.Events("alice") {
			if ev.Type == protocol.EventSpendWarning {
				assert.Contains(t, ev.Warning, "day spend cap of alice")
				warnings++
			}
		}
		assert.Positive(t, warnings, "the warning")

		bobs, capped := burst(t, h, "bob", "b", 32, tenMinutes())
		require.Len(t, bobs, 3, "the project's 48 less alice's 30")
		assert.Contains(t, capped[0].Error(), "month spend cap of acme.ml: 48.00 of 48.00 CRED")
		h.Audit()

		done := finish(t, h, made[0].ID)
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
		spent := h.Balance(caps.SpentID(housetest.Currency))
		assert.True(t, spent.Available.Equal(done.Charge.Mul(dectest.D("2"))), "the charge, from both budgets: %s", spent.Available)

		// Raising alice's cap gives today's budget the difference at once.
		_, err = tr.SetSpendCap(ctx, "root", "alice", housetest.Currency, caps.Day, dectest.D("60"), dectest.D("0.5"), "cap-alice-2")
		require.NoError(t, err)
		budget := h.Balance(caps.BudgetWallet("alice", housetest.Currency, caps.Day, h.Now()))
		assert.True(t, budget.Available.Equal(dectest.D("36").Sub(done.Charge)), "60 less 24 held and the charge: %s", budget.Available)
		more, capped := burst(t, h, "alice", "c", 4, tenMinutes())
		assert.Empty(t, more, "the project's cap is the one in the way now")
		assert.Contains(t, capped[0].Error(), "month spend cap of acme.ml")
		h.Audit()
	})
}

// TestProjectGPUCap: a project capped at 3 GPUs lets its two clients,
// offering 16 times each at once, hold 3 between them; the client's own
// cap still counts too; ending a contract frees its GPU on both caps.
func TestProjectGPUCap(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		tr := spendCaps(t, h, -1)
		openAll(t, tr, acme, "alice", "bob")
		_, err := tr.SetCap(ctx, "root", "acme.ml", 3, "cap-ml")
		require.NoError(t, err)
		_, err = tr.SetCap(ctx, "root", "alice", 1, "cap-alice")
		require.NoError(t, err)
		h.Server("gpu1", "H100", 64, nil)

		var mu sync.Mutex
		var made []protocol.ContractView
		var capped []error
		var wg sync.WaitGroup
		for _, who := range []string{"alice", "bob"} {
			wg.Go(func() {
				ms, cs := burst(t, h, who, who, 16, tenMinutes())
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
			assert.Equal(t, want, contractOf(t, h, c.Client, c.ID).CapHolds)
		}
		assert.LessOrEqual(t, byClient["alice"], 1, "alice's own cap")
		ml := h.Balance(caps.GPUWallet("acme.ml"))
		assert.True(t, ml.Held.Equal(dectest.D("3")) && ml.Available.IsZero(), "%+v", ml)
		h.Audit()

		finish(t, h, made[0].ID)
		ml = h.Balance(caps.GPUWallet("acme.ml"))
		assert.True(t, ml.Held.Equal(dectest.D("2")) && ml.Available.Equal(dectest.D("1")), "one GPU back on the project's cap: %+v", ml)
		require.NotNil(t, offer(t, h, "bob", "after", tenMinutes(), 0).Contract)
		_, err = h.House.Offer(ctx, "bob", protocol.OfferRequest{RequestID: "past", Terms: tenMinutes()})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "concurrent-GPU cap of acme.ml: 3 of 3 GPUs in use")
		h.Audit()
	})
}

// TestSpendRateUnderConcurrency: a bucket of 12 takes two prepayments of
// 6 out of 32 offers at once; the refill the treasury runs lets one more
// through once the time for it has passed.
func TestSpendRateUnderConcurrency(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		tr := spendCaps(t, h, 0)
		openAll(t, tr, [][2]string{{"alice", ""}}, "alice")
		_, err := tr.SetSpendRate(ctx, "root", "alice", housetest.Currency, dectest.D("12"), dectest.D("60"), dectest.D("0"), "rate-alice")
		require.NoError(t, err)
		h.Server("gpu1", "H100", 64, nil)

		made, capped := burst(t, h, "alice", "a", 32, tenMinutes())
		require.Len(t, made, 2, "the bucket's capacity")
		assert.Contains(t, capped[0].Error(), "spend rate of alice: 0.00 of its 12.00 CRED left")
		h.Audit()

		// Six minutes at 60 an hour is 6: one more prepayment.
		rs, err := tr.SpendRates(ctx)
		require.NoError(t, err)
		h.Advance(6 * time.Minute)
		h.Beat()
		_, err = tr.RunSpendRates(ctx, "exchange", time.Unix(0, (rs[0].Refilled+6)*int64(time.Minute)))
		require.NoError(t, err)
		more, _ := burst(t, h, "alice", "b", 4, tenMinutes())
		assert.Len(t, more, 1, "the refill")
		h.Audit()
	})
}

// TestSpendCapChangedBeforeItsPeriod: the exchange caches caps (an hour
// here), but a period's budget is minted with the limit read afresh, so a
// cap raised before its period's first offer is the one that period gets.
func TestSpendCapChangedBeforeItsPeriod(t *testing.T) {
	ctx := context.Background()
	h := housetest.New(t, exchange.Config{})
	tr := spendCaps(t, h, time.Hour)
	openAll(t, tr, [][2]string{{"alice", ""}, {"bob", ""}}, "alice", "bob")
	_, err := tr.SetSpendCap(ctx, "root", "bob", housetest.Currency, caps.Day, dectest.D("12"), dectest.D("0"), "cap-bob-1")
	require.NoError(t, err)
	h.Server("gpu1", "H100", 64, nil)
	made, _ := burst(t, h, "alice", "warm", 1, tenMinutes()) // the exchange reads the caps: bob's is 12
	require.Len(t, made, 1)
	_, err = tr.SetSpendCap(ctx, "root", "bob", housetest.Currency, caps.Day, dectest.D("24"), dectest.D("0"), "cap-bob-2")
	require.NoError(t, err)
	made, _ = burst(t, h, "bob", "b", 8, tenMinutes())
	assert.Len(t, made, 4, "24 of prepayments of 6, not 12")
	h.Audit()
}
