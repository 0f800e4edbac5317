// Package treasurytest is the conformance suite of treasury.Store: every
// store runs it unchanged, through the Treasury.
package treasurytest

import (
	"context"
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

// Opener returns a store beside a new, empty ledger, both on the clock
// now. It registers its own cleanup with t.
type Opener func(t testing.TB, now func() time.Time) treasury.Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	t.Run("Grant", func(t *testing.T) { testGrant(t, open) })
	t.Run("Refused", func(t *testing.T) { testRefused(t, open) })
	t.Run("Cap", func(t *testing.T) { testCap(t, open) })
	t.Run("Exchange", func(t *testing.T) { testExchange(t, open) })
	t.Run("Allowance", func(t *testing.T) { testAllowance(t, open) })
	t.Run("Trail", func(t *testing.T) { testTrail(t, open) })
	t.Run("SameKeyAtOnce", func(t *testing.T) { testSameKeyAtOnce(t, open) })
	t.Run("SpendCap", func(t *testing.T) { testSpendCap(t, open) })
	t.Run("TopUp", func(t *testing.T) { testTopUp(t, open) })
	t.Run("SpendRate", func(t *testing.T) { testSpendRate(t, open) })
	t.Run("Sale", func(t *testing.T) { testSale(t, open) })
	t.Run("SalesAtOnce", func(t *testing.T) { testSalesAtOnce(t, open) })
	t.Run("Adversarial", func(t *testing.T) { RunAdversarial(t, open) })
}

type fixture struct {
	t   testing.TB
	ctx context.Context
	tr  *treasury.Treasury
	l   currency.Ledger

	mu  sync.Mutex
	now time.Time // the clock of the store and its ledger
}

// newFixture makes currencies CRED (cents) and GPU (whole units) and
// alice's wallet in CRED, under the organisation acme. Its clock starts
// at the time the fixture was made, and a test may set it (at).
func newFixture(t testing.TB, open Opener) *fixture {
	f := &fixture{t: t, ctx: context.Background(), now: time.Now().UTC()}
	s := open(t, f.clock)
	f.tr, f.l = treasury.New(s, caps.NewPeriods(f.clock)), s.Ledger()
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "CRED", Scale: 2}))
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "GPU", Scale: 0}))
	_, err := f.tr.Open(f.ctx, "root", "CRED", "acme", "", "open-acme")
	require.NoError(t, err)
	_, err = f.tr.Open(f.ctx, "root", "CRED", "alice", "acme", "open-alice")
	require.NoError(t, err)
	return f
}

// clock ticks a microsecond each time it is read, so that the trail's
// actions keep the order they were made in.
func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(time.Microsecond)
	return f.now
}

// at sets the clock.
func (f *fixture) at(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

func (f *fixture) balance(id currency.AccountID) string {
	f.t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(f.t, err)
	return b.Available.String()
}

func (f *fixture) audit() {
	f.t.Helper()
	r, err := f.l.Audit(f.ctx)
	require.NoError(f.t, err)
	require.True(f.t, r.OK(), "%s", r)
}

func testGrant(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a, err := f.tr.Grant(f.ctx, "ops-ann", "CRED", "alice", dectest.D("100.50"), "g1", "november budget")
	require.NoError(t, err)
	assert.Equal(t, "ops-ann", a.Actor)
	assert.Equal(t, treasury.KindGrant, a.Kind)
	assert.Equal(t, "wallet/CRED/alice", a.Target)
	assert.Equal(t, "0", a.Before["wallet/CRED/alice"])
	assert.Equal(t, "100.5", a.After["wallet/CRED/alice"])
	assert.Equal(t, "-100.5", a.After["issuance/CRED"])
	assert.False(t, a.At.IsZero())

	again, err := f.tr.Grant(f.ctx, "ops-bob", "CRED", "alice", dectest.D("100.5"), "g1", "")
	require.NoError(t, err, "the same grant again, 100.5 written another way")
	assert.Equal(t, a, again, "a replay answers the first action")
	assert.Equal(t, "100.5", f.balance("wallet/CRED/alice"))

	_, err = f.tr.Grant(f.ctx, "ops-ann", "CRED", "alice", dectest.D("200"), "g1", "")
	assert.Equal(t, bourse.EIdempotencyConflict, bourse.ErrorCode(err), "%v", err)

	_, err = f.tr.Burn(f.ctx, "ops-ann", "CRED", "alice", dectest.D("0.5"), "b1", "")
	require.NoError(t, err)
	supply, err := f.tr.Supply(f.ctx, "CRED", 0)
	require.NoError(t, err)
	require.Len(t, supply, 2)
	assert.Equal(t, "100.5", supply[0].Supply.String())
	assert.Equal(t, "100", supply[1].Supply.String())
	assert.Equal(t, "-0.5", supply[1].Change.String())
	f.audit()
}

// testRefused: an action the ledger refuses leaves nothing, not even its
// key, so that the same key goes through once the cause is gone.
func testRefused(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.Burn(f.ctx, "ops-ann", "CRED", "alice", dectest.D("5"), "b1", "")
	assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%v", err)
	_, err = f.tr.Grant(f.ctx, "ops-ann", "CRED", "nobody", dectest.D("5"), "g0", "")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	_, err = f.tr.Grant(f.ctx, "", "CRED", "alice", dectest.D("5"), "g1", "")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "an action names who did it: %v", err)
	_, err = f.tr.Grant(f.ctx, "ops-ann", "CRED", "alice", dectest.D("0.001"), "g2", "")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	acts, err := f.tr.Actions(f.ctx, "", 0)
	require.NoError(t, err)
	assert.Len(t, acts, 2, "only the two opens are in the trail")

	_, err = f.tr.Grant(f.ctx, "ops-ann", "CRED", "alice", dectest.D("5"), "g3", "")
	require.NoError(t, err)
	_, err = f.tr.Burn(f.ctx, "ops-ann", "CRED", "alice", dectest.D("5"), "b1", "")
	require.NoError(t, err, "the refused key is free once the money is there")
	assert.Equal(t, "0", f.balance("wallet/CRED/alice"))
	f.audit()
}

func testCap(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a, err := f.tr.SetCap(f.ctx, "ops-ann", "alice", 4, "c1")
	require.NoError(t, err)
	assert.Equal(t, "0", a.Before["cap"])
	assert.Equal(t, "4", a.After["cap"])
	_, err = f.tr.SetCap(f.ctx, "ops-ann", "bob", 1, "c2")
	require.NoError(t, err)
	// alice runs a contract of 3 GPUs: her cap wallet holds them.
	_, err = currency.Do(f.ctx, f.l, currency.Reserve{Key: "r", Hold: "gpus/k1", From: "wallet/GPU-CAP/alice", Amount: dectest.D("3"), Deadline: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = f.tr.SetCap(f.ctx, "ops-ann", "alice", 2, "c3")
	assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "below the GPUs in use: %v", err)
	_, err = f.tr.SetCap(f.ctx, "ops-ann", "alice", 3, "c4")
	require.NoError(t, err)
	list, err := f.tr.Caps(f.ctx)
	require.NoError(t, err)
	assert.Equal(t, []treasury.Cap{{Client: "alice", GPUs: 3, InUse: 3}, {Client: "bob", GPUs: 1}}, list)
	one, err := f.tr.CapOf(f.ctx, "alice")
	require.NoError(t, err)
	assert.Equal(t, list[0], one, "one client's cap, as the list has it")
	f.audit()
}

func testExchange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.Grant(f.ctx, "ops-ann", "CRED", "alice", dectest.D("100"), "g1", "")
	require.NoError(t, err)
	_, err = f.tr.Convert(f.ctx, "ops-ann", "alice", "CRED", "GPU", dectest.D("10"), "x0")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "no rate set: %v", err)

	_, err = f.tr.SetRate(f.ctx, "ops-ann", "CRED", "GPU", dectest.D("0.5"), "r1")
	require.NoError(t, err)
	a, err := f.tr.Convert(f.ctx, "ops-ann", "alice", "CRED", "GPU", dectest.D("10"), "x1")
	require.NoError(t, err)
	assert.Equal(t, "0.5", a.After["rate"])
	assert.Equal(t, "100", a.Before["wallet/CRED/alice"])
	assert.Equal(t, "90", a.After["wallet/CRED/alice"])
	assert.Equal(t, "5", a.After["wallet/GPU/alice"])

	r2, err := f.tr.SetRate(f.ctx, "ops-bob", "CRED", "GPU", dectest.D("0.25"), "r2")
	require.NoError(t, err)
	assert.Equal(t, "0.5", r2.Before["rate"])
	assert.Equal(t, "0.25", r2.After["rate"])
	_, err = f.tr.Convert(f.ctx, "ops-ann", "alice", "CRED", "GPU", dectest.D("10"), "x1")
	require.NoError(t, err, "a replay after the rate changed is the first exchange")
	assert.Equal(t, "5", f.balance("wallet/GPU/alice"))
	_, err = f.tr.Convert(f.ctx, "ops-ann", "alice", "CRED", "GPU", dectest.D("20"), "x2")
	require.NoError(t, err)
	assert.Equal(t, "10", f.balance("wallet/GPU/alice"))
	assert.Equal(t, "70", f.balance("wallet/CRED/alice"))
	_, err = f.tr.Convert(f.ctx, "ops-ann", "alice", "CRED", "GPU", dectest.D("1000"), "x3")
	assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%v", err)

	rates, err := f.tr.Rates(f.ctx)
	require.NoError(t, err)
	require.Len(t, rates, 1)
	assert.Equal(t, "0.25", rates[0].Rate.String())
	assert.Equal(t, "ops-bob", rates[0].SetBy)
	_, err = f.tr.SetRate(f.ctx, "ops-ann", "CRED", "GPU", decimal.Zero, "r3")
	require.NoError(t, err)
	rates, err = f.tr.Rates(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, rates, "a zero rate removes it")
	f.audit()
}

func testAllowance(t *testing.T, open Opener) {
	f := newFixture(t, open)
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	r := allowance.Rule{Wallet: "wallet/CRED/alice", A: dectest.D("10"), B: dectest.D("0.1"), Period: time.Hour, Start: start}
	a, err := f.tr.SetAllowance(f.ctx, "ops-ann", r, "a1")
	require.NoError(t, err)
	assert.Empty(t, a.Before["allowance"])
	assert.Contains(t, a.After["allowance"], `"a":"10"`)
	rules, err := f.tr.Allowances(f.ctx)
	require.NoError(t, err)
	require.Len(t, rules, 1)
	assert.True(t, rules[0].A.Equal(r.A) && rules[0].B.Equal(r.B) && rules[0].Period == r.Period && rules[0].Start.Equal(start), "%+v", rules[0])

	paid, err := f.tr.PayAllowances(f.ctx, start.Add(3*time.Hour))
	require.NoError(t, err)
	assert.Len(t, paid["wallet/CRED/alice"], 3, "three periods")
	want := r.Project(decimal.Zero, 3*time.Hour, 2)
	assert.Equal(t, want.String(), f.balance("wallet/CRED/alice"), "paid what the closed form says")

	_, err = f.tr.SetAllowance(f.ctx, "ops-ann", allowance.Rule{Wallet: "wallet/CRED/alice", Start: start}, "a2")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	_, err = f.tr.SetAllowance(f.ctx, "ops-ann", allowance.Rule{Wallet: "wallet/CRED/nobody", A: dectest.D("1"), Start: start}, "a3")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)

	rm, err := f.tr.RemoveAllowance(f.ctx, "ops-bob", "wallet/CRED/alice", "a4")
	require.NoError(t, err)
	assert.Contains(t, rm.Before["allowance"], `"a":"10"`)
	rules, err = f.tr.Allowances(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, rules)
	f.audit()
}

func testTrail(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for i := range 5 {
		_, err := f.tr.Grant(f.ctx, fmt.Sprintf("ops-%d", i), "CRED", "alice", dectest.D("1"), fmt.Sprintf("g%d", i), "")
		require.NoError(t, err)
	}
	acts, err := f.tr.Actions(f.ctx, "", 3)
	require.NoError(t, err)
	require.Len(t, acts, 3)
	assert.Equal(t, []string{"g4", "g3", "g2"}, []string{acts[0].Key, acts[1].Key, acts[2].Key}, "newest first")
	more, err := f.tr.Actions(f.ctx, "g2", 10)
	require.NoError(t, err)
	var keys []string
	for _, a := range more {
		keys = append(keys, a.Key)
	}
	assert.Equal(t, []string{"g1", "g0", "open-alice", "open-acme"}, keys)
}

// testSameKeyAtOnce: 16 administrators send the same grant at once, and 16
// others a grant each: one action and one movement for the first, all of
// the others, and the audit clean.
func testSameKeyAtOnce(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var wg sync.WaitGroup
	fresh := make(chan string, 32)
	for i := range 16 {
		wg.Go(func() {
			a, err := f.tr.Grant(f.ctx, fmt.Sprintf("ops-%d", i), "CRED", "alice", dectest.D("7"), "same", "")
			if assert.NoError(t, err) {
				fresh <- a.Actor
			}
		})
		wg.Go(func() {
			_, err := f.tr.Grant(f.ctx, "ops", "CRED", "alice", dectest.D("1"), fmt.Sprintf("own-%d", i), "")
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	close(fresh)
	actors := map[string]bool{}
	for a := range fresh {
		actors[a] = true
	}
	assert.Len(t, actors, 1, "every caller got the one action that was recorded")
	assert.Equal(t, "23", f.balance("wallet/CRED/alice"))
	acts, err := f.tr.Actions(f.ctx, "", 100)
	require.NoError(t, err)
	assert.Len(t, acts, 2+1+16)
	f.audit()
}

func testSpendCap(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a, err := f.tr.SetSpendCap(f.ctx, "ops-ann", "acme", "CRED", caps.Month, dectest.D("500"), dectest.D("0.8"), "s1")
	require.NoError(t, err)
	assert.Equal(t, "CRED/acme/month", a.Target)
	assert.Contains(t, a.After["spend-cap"], `"limit":"500"`)
	_, err = f.tr.SetSpendCap(f.ctx, "ops-ann", "alice", "CRED", caps.Day, dectest.D("50"), dectest.D("0"), "s2")
	require.NoError(t, err)
	list, err := f.tr.SpendCapList(f.ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, caps.Spend{Owner: "acme", Currency: "CRED", Period: caps.Month, Limit: dectest.D("500"), Warn: dectest.D("0.8")}, list[0])
	got, err := f.tr.SpendCaps(0).SpendCaps(f.ctx, "alice", "CRED")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, caps.Day, got[0].Period)

	for _, c := range []struct {
		name, owner string
		p           caps.Period
		limit, warn string
		code        bourse.Code
	}{
		{"Period", "alice", "week", "1", "0", bourse.EInvalid},
		{"Warn", "alice", caps.Day, "1", "1.5", bourse.EInvalid},
		{"Precision", "alice", caps.Day, "0.001", "0", bourse.EInvalid},
		{"Negative", "alice", caps.Day, "-1", "0", bourse.EInvalid},
		{"NoWallet", "nobody", caps.Day, "1", "0", bourse.ENotFound},
	} {
		_, err := f.tr.SetSpendCap(f.ctx, "ops-ann", c.owner, "CRED", c.p, dectest.D(c.limit), dectest.D(c.warn), "bad-"+c.name)
		assert.Equal(t, c.code, bourse.ErrorCode(err), "%s: %v", c.name, err)
	}
	_, err = f.tr.SetSpendCap(f.ctx, "ops-ann", "alice", "CRED", caps.Day, dectest.D("0"), dectest.D("0"), "s3")
	require.NoError(t, err)
	list, err = f.tr.SpendCapList(f.ctx)
	require.NoError(t, err)
	assert.Len(t, list, 1, "a limit of zero removes the cap")
}

func testTopUp(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.Grant(f.ctx, "ops-ann", "CRED", "acme", dectest.D("100"), "g-acme", "")
	require.NoError(t, err)
	_, err = f.tr.SetTopUp(f.ctx, "ops-ann", treasury.TopUp{Wallet: "wallet/CRED/acme", Below: dectest.D("1"), To: dectest.D("2")}, "t0")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "acme has no parent: %v", err)
	_, err = f.tr.SetTopUp(f.ctx, "ops-ann", treasury.TopUp{Wallet: "wallet/CRED/alice", Below: dectest.D("10"), To: dectest.D("30")}, "t1")
	require.NoError(t, err)

	at := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	done, err := f.tr.RunTopUps(f.ctx, "scheduler", at)
	require.NoError(t, err)
	require.Len(t, done, 1)
	assert.Equal(t, "30", done[0].Amount.String())
	assert.Equal(t, "30", f.balance("wallet/CRED/alice"))
	assert.Equal(t, "70", f.balance("wallet/CRED/acme"))

	_, err = f.tr.Burn(f.ctx, "ops-ann", "CRED", "alice", dectest.D("25"), "b1", "")
	require.NoError(t, err)
	_, err = f.tr.RunTopUps(f.ctx, "scheduler", at.Add(time.Second))
	require.NoError(t, err)
	assert.Equal(t, "5", f.balance("wallet/CRED/alice"), "one top-up per wallet per minute, however many schedulers run")
	_, err = f.tr.RunTopUps(f.ctx, "scheduler", at.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "30", f.balance("wallet/CRED/alice"))
	assert.Equal(t, "45", f.balance("wallet/CRED/acme"))

	_, err = f.tr.Burn(f.ctx, "ops-ann", "CRED", "acme", dectest.D("45"), "b2", "")
	require.NoError(t, err)
	_, err = f.tr.Burn(f.ctx, "ops-ann", "CRED", "alice", dectest.D("30"), "b3", "")
	require.NoError(t, err)
	done, err = f.tr.RunTopUps(f.ctx, "scheduler", at.Add(2*time.Minute))
	require.NoError(t, err)
	require.Len(t, done, 1)
	assert.Contains(t, done[0].Err, "insufficient_funds", "the project's budget is spent")
	assert.Equal(t, "0", f.balance("wallet/CRED/alice"))
	acts, err := f.tr.Actions(f.ctx, "", 100)
	require.NoError(t, err)
	var topups int
	for _, a := range acts {
		if a.Kind == treasury.KindTopUp {
			topups++
			assert.Equal(t, "scheduler", a.Actor)
		}
	}
	assert.Equal(t, 2, topups, "the refused top-up left no action")
	f.audit()
}

// testSpendRate: a bucket starts full, refills at its rate for the steps
// that passed, never past its capacity, each step once.
func testSpendRate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.tr.SetSpendRate(f.ctx, "ops-ann", "alice", "CRED", dectest.D("10"), dectest.D("6"), dectest.D("0.5"), "r1")
	require.NoError(t, err)
	bucket := caps.BucketWallet("alice", "CRED")
	assert.Equal(t, "10", f.balance(bucket), "a new bucket is full")
	got, err := f.tr.SpendCaps(0).SpendCaps(f.ctx, "alice", "CRED")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, caps.Bucketed, got[0].Period)

	// 8 spent: what the exchange's settlements do, by hand.
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: "spend", From: bucket, To: caps.SpentID("CRED"), Amount: dectest.D("8")})
	require.NoError(t, err)
	rs, err := f.tr.SpendRates(f.ctx)
	require.NoError(t, err)
	at := time.Unix(0, (rs[0].Refilled+10)*int64(time.Minute))
	done, err := f.tr.RunSpendRates(f.ctx, "exchange", at)
	require.NoError(t, err)
	require.Len(t, done, 1)
	assert.Equal(t, int64(10), done[0].Steps)
	assert.Equal(t, "3", f.balance(bucket), "10 minutes at 6 an hour")
	done, err = f.tr.RunSpendRates(f.ctx, "exchange", at.Add(30*time.Second))
	require.NoError(t, err)
	assert.Empty(t, done, "a step refills once")
	_, err = f.tr.RunSpendRates(f.ctx, "exchange", at.Add(5*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "10", f.balance(bucket), "never past the capacity")

	_, err = f.tr.SetSpendRate(f.ctx, "ops-ann", "alice", "CRED", dectest.D("4"), dectest.D("6"), dectest.D("0"), "r2")
	require.NoError(t, err)
	assert.Equal(t, "4", f.balance(bucket), "a smaller bucket at once")
	_, err = f.tr.SetSpendRate(f.ctx, "ops-ann", "alice", "CRED", dectest.D("4"), dectest.D("0"), dectest.D("0"), "r3")
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "no refill: %v", err)
	uses, err := f.tr.SpendUses(f.ctx)
	require.NoError(t, err)
	require.Len(t, uses, 1)
	assert.Equal(t, "0", uses[0].Used.String())
	f.audit()
}
