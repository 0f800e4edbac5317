package treasurytest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/treasury"
)

// The adversarial suite: what a client that spends at the worst moment,
// two schedulers that run at once (on either side of a period's or a
// step's edge), and an administrator who changes a setting while a
// scheduled action is under way would otherwise do to the money. Every
// test ends with a clean audit.

// RunAdversarial runs the adversarial suite.
func RunAdversarial(t *testing.T, open Opener) {
	t.Run("AllowanceWalletSpent", func(t *testing.T) { testAllowanceWalletSpent(t, open) })
	t.Run("AllowanceReplaced", func(t *testing.T) { testAllowanceReplaced(t, open) })
	t.Run("AllowanceClockAhead", func(t *testing.T) { testAllowanceClockAhead(t, open) })
	t.Run("AllowanceRunsAtOnce", func(t *testing.T) { testAllowanceRunsAtOnce(t, open) })
	t.Run("TopUpsAtOnce", func(t *testing.T) { testTopUpsAtOnce(t, open) })
	t.Run("RefillsAtOnce", func(t *testing.T) { testRefillsAtOnce(t, open) })
	t.Run("RefillKeepsAdminChange", func(t *testing.T) { testRefillKeepsAdminChange(t, open) })
	t.Run("SpendCapSetAgain", func(t *testing.T) { testSpendCapSetAgain(t, open) })
	t.Run("CapsAtOnce", func(t *testing.T) { testCapsAtOnce(t, open) })
	t.Run("UnreachableLimits", func(t *testing.T) { testUnreachableLimits(t, open) })
	t.Run("Schedulers", func(t *testing.T) { testSchedulers(t, open) })
}

// hourGrid sets the fixture's clock to the start of the next hour and
// returns it, so that allowances' periods fall on round hours.
func (f *fixture) hourGrid() time.Time {
	start := f.clock().Truncate(time.Hour).Add(time.Hour)
	f.at(start)
	return start
}

// spend moves amount out of owner's wallet in CRED to the shop, as a
// client paying for something would.
func (f *fixture) spend(owner, amount, key string) {
	f.t.Helper()
	shop, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.RevenueID("CRED", "shop"), Currency: "CRED", Kind: currency.Revenue})
	require.NoError(f.t, err)
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: key, From: currency.WalletID("CRED", owner), To: shop.ID, Amount: dectest.D(amount)})
	require.NoError(f.t, err)
}

// testAllowanceWalletSpent: the wallet spends just after a period ends and
// before the scheduler pays it, so the period's decay is more than the
// wallet has. The run takes what there is and the allowance goes on
// paying, and a rule removed and set again pays too.
func testAllowanceWalletSpent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	start := f.hourGrid()
	_, err := f.tr.Grant(f.ctx, "ops", "CRED", "alice", dectest.D("100"), "g", "")
	require.NoError(t, err)
	r := allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("10"), B: dectest.D("0.5"), Period: time.Hour, Start: start}
	_, err = f.tr.SetAllowance(f.ctx, "ops", r, "a1")
	require.NoError(t, err)

	f.at(start.Add(time.Hour + time.Minute))
	f.spend("alice", "95", "spent")
	_, err = f.tr.PayAllowances(f.ctx, f.clock())
	require.NoError(t, err, "the decay of 31.48 takes the 5 there is")
	assert.Equal(t, "0", f.balance("wallet/CRED/alice"))

	f.at(start.Add(4*time.Hour + time.Minute))
	_, err = f.tr.PayAllowances(f.ctx, f.clock())
	require.NoError(t, err)
	assert.Equal(t, r.Project(decimal.Zero, 3*time.Hour, 2).String(), f.balance("wallet/CRED/alice"),
		"three periods from nothing after the spending")

	_, err = f.tr.RemoveAllowance(f.ctx, "ops", r.Wallet, "a2")
	require.NoError(t, err)
	_, err = f.tr.SetAllowance(f.ctx, "ops", r, "a3")
	require.NoError(t, err)
	before := f.balance("wallet/CRED/alice")
	f.at(start.Add(6*time.Hour + time.Minute))
	paid, err := f.tr.PayAllowances(f.ctx, f.clock())
	require.NoError(t, err)
	assert.NotEmpty(t, paid[r.Wallet], "the rule set again pays")
	assert.NotEqual(t, before, f.balance("wallet/CRED/alice"))
	f.audit()
}

// testAllowanceReplaced: a rule that replaces another pays its own
// periods from its own start, never taking the old rule's payments for
// its own.
func testAllowanceReplaced(t *testing.T, open Opener) {
	f := newFixture(t, open)
	start := f.hourGrid()
	old := allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("10"), Period: time.Hour, Start: start}
	_, err := f.tr.SetAllowance(f.ctx, "ops", old, "a1")
	require.NoError(t, err)
	f.at(start.Add(3 * time.Hour))
	_, err = f.tr.PayAllowances(f.ctx, f.clock())
	require.NoError(t, err)
	require.Equal(t, "30", f.balance("wallet/CRED/alice"))

	repl := allowance.Rule{Wallet: old.Wallet, A: dectest.D("10"), B: dectest.D("0.5"), Period: time.Hour, Start: start.Add(3 * time.Hour)}
	_, err = f.tr.SetAllowance(f.ctx, "ops", repl, "a2")
	require.NoError(t, err)
	f.at(start.Add(6*time.Hour + time.Second))
	_, err = f.tr.PayAllowances(f.ctx, f.clock())
	require.NoError(t, err)
	// 20 + (30 − 20)·e^(−1.5)
	assert.Equal(t, "22.23", f.balance("wallet/CRED/alice"))
	rules, err := f.tr.Allowances(f.ctx)
	require.NoError(t, err)
	require.Len(t, rules, 1)
	assert.Greater(t, rules[0].Version, int64(1))
	f.audit()
}

// testAllowanceClockAhead: a scheduler whose clock is hours ahead of the
// store's pays only the periods that have ended by the store's.
func testAllowanceClockAhead(t *testing.T, open Opener) {
	f := newFixture(t, open)
	start := f.hourGrid()
	r := allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("10"), Period: time.Hour, Start: start}
	_, err := f.tr.SetAllowance(f.ctx, "ops", r, "a1")
	require.NoError(t, err)
	f.at(start.Add(2*time.Hour + time.Minute))
	_, err = f.tr.PayAllowances(f.ctx, start.Add(10*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "20", f.balance("wallet/CRED/alice"), "two periods have ended, not ten")
	f.audit()
}

// testAllowanceRunsAtOnce: at each period's edge two schedulers run at
// once, one a moment before it and one a moment after, while the wallet
// spends; the payments are those that one scheduler makes with one run
// after each edge.
func testAllowanceRunsAtOnce(t *testing.T, open Opener) {
	play := func(runs func(f *fixture, edge time.Time)) (map[int64]string, string) {
		f := newFixture(t, open)
		start := f.hourGrid()
		_, err := f.tr.Grant(f.ctx, "ops", "CRED", "alice", dectest.D("50"), "g", "")
		require.NoError(t, err)
		r := allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("4"), B: dectest.D("0.2"), Period: time.Hour, Start: start}
		_, err = f.tr.SetAllowance(f.ctx, "ops", r, "a1")
		require.NoError(t, err)
		for n := 1; n <= 6; n++ {
			edge := start.Add(time.Duration(n) * time.Hour)
			f.at(edge.Add(time.Millisecond))
			if n%2 == 0 {
				f.spend("alice", "3", fmt.Sprint("spend-", n))
			}
			runs(f, edge)
		}
		paid, err := f.tr.PayAllowances(f.ctx, f.clock())
		require.NoError(t, err)
		require.Len(t, paid[r.Wallet], 6)
		out := map[int64]string{}
		for _, p := range paid[r.Wallet] {
			assert.False(t, p.New, "period %d was left for the last run", p.Period)
			out[p.Period] = p.Amount.String()
		}
		f.audit()
		return out, f.balance(r.Wallet)
	}
	onePaid, oneBal := play(func(f *fixture, edge time.Time) {
		_, err := f.tr.PayAllowances(f.ctx, edge.Add(time.Millisecond))
		require.NoError(t, err)
	})
	twoPaid, twoBal := play(func(f *fixture, edge time.Time) {
		var wg sync.WaitGroup
		for _, at := range []time.Time{edge.Add(-time.Millisecond), edge.Add(time.Millisecond)} {
			wg.Go(func() {
				_, err := f.tr.PayAllowances(f.ctx, at)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	})
	assert.Equal(t, onePaid, twoPaid)
	assert.Equal(t, oneBal, twoBal)
}

// testTopUpsAtOnce: two schedulers whose clocks straddle a step's edge
// both find alice below her threshold; she is topped up once.
func testTopUpsAtOnce(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.Grant(f.ctx, "ops", "CRED", "acme", dectest.D("100000"), "g-acme", "")
	require.NoError(t, err)
	_, err = f.tr.SetTopUp(f.ctx, "ops", treasury.TopUp{Wallet: "wallet/CRED/alice", Below: dectest.D("10"), To: dectest.D("30"), Every: time.Minute}, "t1")
	require.NoError(t, err)
	edge := f.clock().Truncate(time.Minute).Add(time.Minute)
	for i := range 40 {
		edge = edge.Add(2 * time.Minute) // a step apart from the last round's two
		// alice at 5
		bal := dectest.D(f.balance("wallet/CRED/alice"))
		if bal.GreaterThan(dectest.D("5")) {
			f.spend("alice", bal.Sub(dectest.D("5")).String(), fmt.Sprint("down-", i))
		}
		var wg sync.WaitGroup
		for _, at := range []time.Time{edge.Add(-time.Nanosecond), edge} {
			wg.Go(func() {
				_, err := f.tr.RunTopUps(f.ctx, "scheduler", at)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		require.Equal(t, "30", f.balance("wallet/CRED/alice"), "round %d: topped up once, to 30", i)
	}
	f.audit()
}

// testRefillsAtOnce: after an idle gap, two exchanges whose clocks
// straddle a step's edge refill a spent bucket at once; it is refilled to
// its capacity, not past it.
func testRefillsAtOnce(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", dectest.D("300"), dectest.D("60"), dectest.D("0"), "r1")
	require.NoError(t, err)
	bucket := caps.BucketWallet("alice", "CRED")
	at := f.clock()
	for i := range 20 {
		_, err := currency.Do(f.ctx, f.l, currency.Transfer{Key: fmt.Sprint("spent-", i), From: bucket, To: caps.SpentID("CRED"), Amount: dectest.D("300"), UpTo: true})
		require.NoError(t, err)
		at = at.Add(10 * time.Hour).Truncate(time.Minute)
		var wg sync.WaitGroup
		for _, when := range []time.Time{at.Add(-time.Nanosecond), at} {
			wg.Go(func() {
				_, err := f.tr.RunSpendRates(f.ctx, "exchange", when)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		require.Equal(t, "300", f.balance(bucket), "round %d: full, not overfull", i)
	}
	f.audit()
}

// testRefillKeepsAdminChange: an administrator changes a bucket's
// capacity while refills run; the capacity set is the one that stays.
func testRefillKeepsAdminChange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", dectest.D("300"), dectest.D("60"), dectest.D("0"), "r0")
	require.NoError(t, err)
	bucket := caps.BucketWallet("alice", "CRED")
	at := f.clock()
	for i := range 20 {
		capacity := []string{"100", "300"}[i%2]
		_, err := currency.Do(f.ctx, f.l, currency.Transfer{Key: fmt.Sprint("spent-", i), From: bucket, To: caps.SpentID("CRED"), Amount: dectest.D("50"), UpTo: true})
		require.NoError(t, err)
		at = at.Add(time.Hour)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := f.tr.RunSpendRates(f.ctx, "exchange", at)
			assert.NoError(t, err)
		})
		wg.Go(func() {
			_, err := f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", dectest.D(capacity), dectest.D("60"), dectest.D("0"), fmt.Sprint("r", i+1))
			assert.NoError(t, err)
		})
		wg.Wait()
		rs, err := f.tr.SpendRates(f.ctx)
		require.NoError(t, err)
		require.Len(t, rs, 1)
		require.Equal(t, capacity, rs[0].Capacity.String(), "round %d: the administrator's capacity stays", i)
		require.True(t, dectest.D(f.balance(bucket)).LessThanOrEqual(dectest.D(capacity)), "round %d: %s in a bucket of %s", i, f.balance(bucket), capacity)
	}
	f.audit()
}

// testSpendCapSetAgain: a daily cap of 100 of which 80 is used; removed
// and set again, or lowered and raised, the same day, it leaves 20 to
// commit, not 100.
func testSpendCapSetAgain(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, dectest.D("100"), dectest.D("0"), "s1")
	require.NoError(t, err)
	budget := caps.BudgetWallet("alice", "CRED", caps.Day, f.clock())
	require.Equal(t, "100", f.balance(budget), "the day's budget, made with the cap")
	// 80 committed: 50 charged, 30 held by a running contract.
	dl := f.clock().Add(time.Hour)
	for _, h := range []struct {
		hold, amount string
	}{{"c1", "50"}, {"c2", "30"}} {
		_, err := currency.Do(f.ctx, f.l, currency.Reserve{Key: "r-" + h.hold, Hold: currency.HoldID(h.hold), From: budget, Amount: dectest.D(h.amount), Deadline: dl})
		require.NoError(t, err)
	}
	_, err = currency.Do(f.ctx, f.l, currency.Capture{Key: "c-c1", Hold: "c1", To: caps.SpentID("CRED"), Amount: dectest.D("50")})
	require.NoError(t, err)
	require.Equal(t, "20", f.balance(budget))

	_, err = f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, dectest.D("0"), dectest.D("0"), "s2")
	require.NoError(t, err)
	assert.Equal(t, "0", f.balance(budget), "removed: what was left goes back")
	_, err = f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, dectest.D("100"), dectest.D("0"), "s3")
	require.NoError(t, err)
	assert.Equal(t, "20", f.balance(budget), "set again: 100 less the 80 used")

	_, err = f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, dectest.D("50"), dectest.D("0"), "s4")
	require.NoError(t, err)
	assert.Equal(t, "0", f.balance(budget), "below what is used: nothing left")
	_, err = f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, dectest.D("100"), dectest.D("0"), "s5")
	require.NoError(t, err)
	assert.Equal(t, "20", f.balance(budget), "raised again: 100 less the 80 used")

	// An exchange that read the cap before it was set, minting the day's
	// budget after, mints nothing: its key is used.
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: caps.BudgetKey(budget), From: currency.IssuanceID(caps.SpendCode("CRED")), To: budget, Amount: dectest.D("60")})
	assert.Equal(t, bourse.EIdempotencyConflict, bourse.ErrorCode(err), "%v", err)
	assert.Equal(t, "20", f.balance(budget))
	f.audit()
}

// testCapsAtOnce: two administrators raise alice's GPU cap from 4 to 6 at
// once, under their own keys: it is 6, not 8.
func testCapsAtOnce(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.SetCap(f.ctx, "ops", "alice", 4, "c0")
	require.NoError(t, err)
	for i := range 10 {
		var wg sync.WaitGroup
		for j := range 2 {
			wg.Go(func() {
				_, err := f.tr.SetCap(f.ctx, fmt.Sprint("ops-", j), "alice", 6+i%2, fmt.Sprint("c", i, "-", j))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		caps, err := f.tr.Caps(f.ctx)
		require.NoError(t, err)
		require.Len(t, caps, 1)
		require.Equal(t, int64(6+i%2), caps[0].GPUs, "round %d", i)
	}
	f.audit()
}

// testUnreachableLimits: a limit no amount can reach (amounts and
// balances stay below 10^18) is refused where it is set, naming the bound.
func testUnreachableLimits(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.Grant(f.ctx, "ops", "CRED", "acme", dectest.D("1"), "g", "")
	require.NoError(t, err)
	huge := dectest.D("1e40")
	for name, try := range map[string]func() error{
		"SpendCap": func() error {
			_, err := f.tr.SetSpendCap(f.ctx, "ops", "alice", "CRED", caps.Day, huge, dectest.D("0"), "s1")
			return err
		},
		"SpendRate": func() error {
			_, err := f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", huge, dectest.D("1"), dectest.D("0"), "r1")
			return err
		},
		"SpendRatePerHour": func() error {
			_, err := f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", dectest.D("10"), huge, dectest.D("0"), "r2")
			return err
		},
		"TopUp": func() error {
			_, err := f.tr.SetTopUp(f.ctx, "ops", treasury.TopUp{Wallet: "wallet/CRED/alice", Below: dectest.D("1"), To: huge}, "t1")
			return err
		},
		"Allowance": func() error {
			_, err := f.tr.SetAllowance(f.ctx, "ops", allowance.Rule{Wallet: "wallet/CRED/alice", A: huge, Start: f.clock()}, "a1")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := try()
			require.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
			assert.Contains(t, err.Error(), "10^18")
		})
	}
	acts, err := f.tr.Actions(f.ctx, "", 100)
	require.NoError(t, err)
	for _, a := range acts {
		assert.NotContains(t, []string{"s1", "r1", "r2", "t1", "a1"}, a.Key, "a refused setting leaves no action")
	}
	f.audit()
}

// testSchedulers: three schedulers (three exchange instances) run their
// rounds at once, every ten minutes of a day, over an allowance, a top-up
// and a spend rate, and the third stops (its instance dies) a quarter of
// the way in; each action is done once, none waits for the one that
// stopped, and a rule replaced midway is paid from its own start.
func testSchedulers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	start := f.hourGrid()
	_, err := f.tr.Grant(f.ctx, "ops", "CRED", "acme", dectest.D("1000"), "g", "")
	require.NoError(t, err)
	_, err = f.tr.Open(f.ctx, "ops", "CRED", "bob", "acme", "open-bob")
	require.NoError(t, err)
	_, err = f.tr.SetAllowance(f.ctx, "ops", allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("1"), Period: time.Hour, Start: start}, "a1")
	require.NoError(t, err)
	_, err = f.tr.SetTopUp(f.ctx, "ops", treasury.TopUp{Wallet: "wallet/CRED/bob", Below: dectest.D("5"), To: dectest.D("20")}, "t1")
	require.NoError(t, err)
	_, err = f.tr.SetSpendRate(f.ctx, "ops", "alice", "CRED", dectest.D("60"), dectest.D("60"), dectest.D("0"), "r1")
	require.NoError(t, err)
	bucket := caps.BucketWallet("alice", "CRED")

	a, b, c := treasury.NewScheduler(f.tr, "exchange-a"), treasury.NewScheduler(f.tr, "exchange-b"), treasury.NewScheduler(f.tr, "exchange-c")
	for i := 1; i <= 6*24; i++ {
		now := start.Add(time.Duration(i) * 10 * time.Minute)
		f.at(now)
		switch i {
		case 30:
			f.spend("bob", "18", "bob-spends") // below 5: topped up back to 20
			_, err := currency.Do(f.ctx, f.l, currency.Transfer{Key: "bucket-spent", From: bucket, To: caps.SpentID("CRED"), Amount: dectest.D("60")})
			require.NoError(t, err)
		case 72: // half a day in: a new rule, 2 an hour
			_, err := f.tr.SetAllowance(f.ctx, "ops", allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("2"), Period: time.Hour, Start: now}, "a2")
			require.NoError(t, err)
		}
		running := []*treasury.Scheduler{a, b, c}
		if i > 36 {
			running = running[:2]
		}
		var wg sync.WaitGroup
		for _, s := range running {
			wg.Go(func() {
				_, err := s.Run(f.ctx, now)
				assert.NoError(t, err)
			})
		}
		wg.Wait()
	}
	assert.Equal(t, "36", f.balance("wallet/CRED/alice"), "12 hours at 1, then 12 at 2")
	assert.Equal(t, "20", f.balance("wallet/CRED/bob"), "topped up when opened empty, and once after spending")
	assert.Equal(t, "60", f.balance(bucket), "refilled to its capacity once the hour passed")
	acts, err := f.tr.Actions(f.ctx, "", 1000)
	require.NoError(t, err)
	topups := 0
	for _, a := range acts {
		if a.Kind == treasury.KindTopUp {
			topups++
		}
	}
	assert.Equal(t, 2, topups, "two top-ups, each by one of the schedulers")
	f.audit()
}
