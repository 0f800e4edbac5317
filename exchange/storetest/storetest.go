// Package storetest is the conformance suite that every exchange.Store runs
// unchanged (exchange/memstore, exchange/sqlstore): the semantics that
// exchange/store.go documents, as tests, and concurrent updates of one
// contract, each test ending with a clean audit of the ledger.
//
// Update is given at most one ledger operation at a time, the most that
// memstore makes atomic.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/bourse/bourse/internal/dectest"
)

// Opener returns a new, empty store over a new, empty ledger. It registers
// its own cleanup with t.
type Opener func(t testing.TB) exchange.Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	t.Run("Open", func(t *testing.T) { testOpen(t, open) })
	t.Run("OpenIdempotent", func(t *testing.T) { testOpenIdempotent(t, open) })
	t.Run("OpenReserveFails", func(t *testing.T) { testOpenReserveFails(t, open) })
	t.Run("OpenReservesAllOrNone", func(t *testing.T) { testOpenReservesAllOrNone(t, open) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open) })
	t.Run("Update", func(t *testing.T) { testUpdate(t, open) })
	t.Run("UpdateSettles", func(t *testing.T) { testUpdateSettles(t, open) })
	t.Run("UpdateOpFails", func(t *testing.T) { testUpdateOpFails(t, open) })
	t.Run("ErrNoChange", func(t *testing.T) { testNoChange(t, open) })
	t.Run("Copies", func(t *testing.T) { testCopies(t, open) })
	t.Run("Contracts", func(t *testing.T) { testContracts(t, open) })
	t.Run("Between", func(t *testing.T) { testBetween(t, open) })
	t.Run("Settled", func(t *testing.T) { testSettled(t, open) })
	t.Run("Stale", func(t *testing.T) { testStale(t, open) })
	t.Run("FailureNotKept", func(t *testing.T) { testFailureNotKept(t, open) })
	t.Run("Stuck", func(t *testing.T) { testStuck(t, open) })
	t.Run("ConcurrentUpdates", func(t *testing.T) { testConcurrentUpdates(t, open) })
	t.Run("ConcurrentSettle", func(t *testing.T) { testConcurrentSettle(t, open) })
	t.Run("ConcurrentMixed", func(t *testing.T) { testConcurrentMixed(t, open) })
	t.Run("Locks", func(t *testing.T) { testLocks(t, open) })
	t.Run("LockFunds", func(t *testing.T) { testLockFunds(t, open) })
	t.Run("Book", func(t *testing.T) { testBook(t, open) })
	t.Run("BookLimits", func(t *testing.T) { testBookLimits(t, open) })
	t.Run("BookAndContracts", func(t *testing.T) { testBookAndContracts(t, open) })
	t.Run("BookConcurrent", func(t *testing.T) { testBookConcurrent(t, open) })
	t.Run("Hearings", func(t *testing.T) { testHearings(t, open) })
	t.Run("Records", func(t *testing.T) { testRecords(t, open) })
	t.Run("Canaries", func(t *testing.T) { testCanaries(t, open) })
}

const (
	gpu    currency.Code = "GPU"
	server string        = "srv"
)

// t0 is the suite's first instant. Its nanoseconds are on purpose: stores
// must keep them.
var t0 = time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.UTC)

// fixture is a store whose ledger has currency GPU (scale 2), the revenue
// account of server srv, and funded wallets.
type fixture struct {
	t   testing.TB
	ctx context.Context
	s   exchange.Store
	l   currency.Ledger
}

func newFixture(t testing.TB, open Opener) *fixture {
	t.Helper()
	s := open(t)
	f := &fixture{t: t, ctx: context.Background(), s: s, l: s.Ledger()}
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: gpu, Scale: 2}))
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.RevenueID(gpu, server), Currency: gpu, Kind: currency.Revenue})
	require.NoError(t, err)
	t.Cleanup(f.audit)
	return f
}

// wallet opens client's wallet with amount in it.
func (f *fixture) wallet(client, amount string) currency.AccountID {
	f.t.Helper()
	id := currency.WalletID(gpu, client)
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: id, Currency: gpu, Kind: currency.Wallet})
	require.NoError(f.t, err)
	if amount != "0" {
		f.mint("mint/"+client, id, amount)
	}
	return id
}

func (f *fixture) mint(key string, to currency.AccountID, amount string) {
	f.t.Helper()
	_, err := currency.Do(f.ctx, f.l, currency.Transfer{Key: key, From: currency.IssuanceID(gpu), To: to, Amount: dectest.D(amount)})
	require.NoError(f.t, err)
}

// balance requires the account's available and held amounts.
func (f *fixture) balance(id currency.AccountID, available, held string) {
	f.t.Helper()
	b, err := f.l.Balance(f.ctx, id)
	require.NoError(f.t, err)
	assert.True(f.t, b.Available.Equal(dectest.D(available)), "%s available %s, want %s", id, b.Available, available)
	assert.True(f.t, b.Held.Equal(dectest.D(held)), "%s held %s, want %s", id, b.Held, held)
}

func (f *fixture) hold(id string) currency.Hold {
	f.t.Helper()
	h, err := f.l.Hold(f.ctx, currency.HoldID(id))
	require.NoError(f.t, err)
	return h
}

// audit requires the ledger's invariants to hold.
func (f *fixture) audit() {
	f.t.Helper()
	rep, err := f.l.Audit(f.ctx)
	require.NoError(f.t, err)
	assert.True(f.t, rep.OK(), "%s", rep)
}

// newContract is an accepted contract of client with a prepayment of 10,
// accepted at `at`.
func newContract(id, client string, at time.Time) contract.Contract {
	return contract.Contract{
		ID: id, Client: client, Server: server, State: contract.StateAccepted,
		Terms: contract.Terms{
			Client: client, Currency: string(gpu), GPUs: 2, TimeLimit: time.Hour, Prepayment: dectest.D("10"),
			P: contract.Flat(dectest.D("0.01")), Server: server,
		},
		AcceptedAt: at, StartDeadline: at.Add(time.Minute),
	}
}

// reserve is c's escrow, under key.
func reserve(c contract.Contract, key string) currency.Reserve {
	return currency.Reserve{
		Key: key, Hold: currency.HoldID(c.ID), From: currency.WalletID(gpu, c.Client),
		Amount: c.Terms.Prepayment, Deadline: c.StartDeadline.Add(24 * time.Hour), Memo: "prepayment of " + c.ID,
	}
}

// open opens c and requires it to be created.
func (f *fixture) open(c contract.Contract) contract.Contract {
	f.t.Helper()
	stored, created, err := f.s.Open(f.ctx, c, "", reserve(c, "escrow/"+c.ID))
	require.NoError(f.t, err)
	require.True(f.t, created)
	same(f.t, c, stored)
	return stored
}

// get requires contract id to be stored and returns it.
func (f *fixture) get(id string) contract.Contract {
	f.t.Helper()
	c, err := f.s.Contract(f.ctx, id)
	require.NoError(f.t, err)
	return c
}

// same requires two contracts to be equal as records: their JSON, which
// is what a store keeps (decimals in shortest form, times to the
// nanosecond without monotonic readings).
func same(t testing.TB, want, got contract.Contract) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	g, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(w), string(g))
}

func ids(cs []contract.Contract) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

// run marks contract id running, last seen at `seen`, through Update.
func (f *fixture) run(id string, seen time.Time) contract.Contract {
	f.t.Helper()
	c, err := f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.StartedAt, c.LastSeen, c.GPUs = contract.StateRunning, seen, seen, []int{0, 1}
		return nil, nil
	})
	require.NoError(f.t, err)
	return c
}

// settle changes c to settled with charge and returns the capture.
func settle(c *contract.Contract, key, charge string, at time.Time) []currency.Op {
	c.State, c.Reason, c.SettledAt = contract.StateSettled, contract.ReasonCompleted, at
	c.Charge, c.Refund = dectest.D(charge), c.Terms.Prepayment.Sub(dectest.D(charge))
	return []currency.Op{currency.Capture{Key: key, Hold: currency.HoldID(c.ID), To: currency.RevenueID(gpu, server),
		Amount: dectest.D(charge), Memo: "contract " + c.ID}}
}

func testOpen(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	c := newContract("c1", "alice", t0)
	c.Resumes, c.GPUs = "c0", []int{3}
	f.open(c)
	same(t, c, f.get("c1"))
	f.balance(w, "90", "10")
	h := f.hold("c1")
	assert.Equal(t, currency.HoldOpen, h.Status)
	assert.True(t, h.Amount.Equal(dectest.D("10")))
}

// A second Open of an id returns the first contract and writes nothing,
// whatever it carries.
func testOpenIdempotent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	c := f.open(newContract("c1", "alice", t0))

	again := newContract("c1", "alice", t0.Add(time.Second))
	again.Terms.Prepayment = dectest.D("20")
	stored, created, err := f.s.Open(f.ctx, again, "", reserve(again, "escrow/c1/again"))
	require.NoError(t, err)
	assert.False(t, created)
	same(t, c, stored)
	same(t, c, f.get("c1"))
	f.balance(w, "90", "10")
	st, err := f.l.Statement(f.ctx, w, 0, 0)
	require.NoError(t, err)
	assert.Len(t, st, 2, "the mint and one reserve")

	// The same Open again, as a retry would send it.
	stored, created, err = f.s.Open(f.ctx, c, "", reserve(c, "escrow/c1"))
	require.NoError(t, err)
	assert.False(t, created)
	same(t, c, stored)
	f.balance(w, "90", "10")

	// Once the contract has run and settled, a retry finds it as it
	// stands now, not as it was opened.
	f.run("c1", t0.Add(time.Minute))
	settled, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/c1", "3.25", t0.Add(time.Hour)), nil
	})
	require.NoError(t, err)
	stored, created, err = f.s.Open(f.ctx, c, "", reserve(c, "escrow/c1/late"))
	require.NoError(t, err)
	assert.False(t, created)
	same(t, settled, stored)
	f.balance(w, "96.75", "0")
}

// A reserve that fails leaves no contract and moves nothing; its failure
// stays under its key, as the ledger keeps every failed key, and a later
// Open under a new key can succeed.
func testOpenReserveFails(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "5")
	c := newContract("c1", "alice", t0)
	r := reserve(c, "escrow/c1/1")

	_, created, err := f.s.Open(f.ctx, c, "", r)
	require.Error(t, err)
	assert.False(t, created)
	var be *bourse.Error
	require.ErrorAs(t, err, &be)
	assert.Equal(t, bourse.EInsufficientFunds, be.Code, "%v", err)
	_, err = f.s.Contract(f.ctx, "c1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	cs, err := f.s.Contracts(f.ctx, "alice", 0)
	require.NoError(t, err)
	assert.Empty(t, cs)
	f.balance(w, "5", "0")
	_, err = f.l.Hold(f.ctx, "c1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)

	// The key stays failed, even once the wallet could pay.
	f.mint("topup", w, "20")
	rs, err := f.l.Apply(f.ctx, r)
	require.NoError(t, err)
	require.NotNil(t, rs[0].Err, "the failure is kept under the key")
	assert.Equal(t, bourse.EInsufficientFunds, rs[0].Err.Code)

	// A wallet that does not exist.
	bob := newContract("c2", "bob", t0)
	_, _, err = f.s.Open(f.ctx, bob, "", reserve(bob, "escrow/c2"))
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	_, err = f.s.Contract(f.ctx, "c2")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)

	// Under a new key, with the money there, the same contract opens.
	stored, created, err := f.s.Open(f.ctx, c, "", reserve(c, "escrow/c1/2"))
	require.NoError(t, err)
	assert.True(t, created)
	same(t, c, stored)
	f.balance(w, "15", "10")
}

func testNotFound(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.s.Contract(f.ctx, "nope")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	called := false
	_, err = f.s.Update(f.ctx, "nope", func(*contract.Contract) ([]currency.Op, error) {
		called = true
		return nil, nil
	})
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	assert.False(t, called, "change is not called for a missing contract")
	cs, err := f.s.Contracts(f.ctx, "nobody", 10)
	require.NoError(t, err)
	assert.Empty(t, cs)
	cs, err = f.s.Stale(f.ctx, t0, t0, 10)
	require.NoError(t, err)
	assert.Empty(t, cs)
}

// An Update without ledger operations changes the contract, and change
// sees the stored contract.
func testUpdate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	c := f.open(newContract("c1", "alice", t0))

	seen := t0.Add(3*time.Second + 7)
	got := f.run("c1", seen)
	want := c
	want.State, want.StartedAt, want.LastSeen, want.GPUs = contract.StateRunning, seen, seen, []int{0, 1}
	same(t, want, got)
	same(t, want, f.get("c1"))

	exit := 0
	r := contract.Reading{Contract: "c1", Seq: 1, U: dectest.D("1.5"), T: contract.Duration(time.Second),
		S: dectest.D("0.25"), EnergyJ: dectest.D("12.000001"), At: seen.Add(time.Nanosecond), ExitCode: &exit}
	got, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		same(t, want, *c)
		rr := r
		c.Reading, c.LastSeen = &rr, seen.Add(time.Second)
		return nil, nil
	})
	require.NoError(t, err)
	want.Reading, want.LastSeen = &r, seen.Add(time.Second)
	same(t, want, got)
	same(t, want, f.get("c1"))
	require.NotNil(t, got.Reading)
	assert.True(t, got.Reading.At.Equal(r.At))
	f.balance(currency.WalletID(gpu, "alice"), "90", "10")
}

// An Update with a capture settles the contract and moves the money
// together; a void returns the prepayment whole.
func testUpdateSettles(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	f.open(newContract("c1", "alice", t0))
	f.open(newContract("c2", "alice", t0.Add(time.Second)))
	f.run("c1", t0.Add(time.Minute))

	var want contract.Contract
	got, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		ops := settle(c, "settle/c1", "3.25", t0.Add(time.Hour))
		want = *c
		return ops, nil
	})
	require.NoError(t, err)
	same(t, want, got)
	same(t, want, f.get("c1"))
	h := f.hold("c1")
	assert.Equal(t, currency.HoldCaptured, h.Status)
	assert.True(t, h.Captured.Equal(dectest.D("3.25")), "captured %s", h.Captured)
	f.balance(currency.RevenueID(gpu, server), "3.25", "0")

	got, err = f.s.Update(f.ctx, "c2", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.Reason, c.Refund = contract.StateVoided, contract.ReasonNotStarted, c.Terms.Prepayment
		return []currency.Op{currency.Void{Key: "void/c2", Hold: "c2"}}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, contract.StateVoided, got.State)
	assert.Equal(t, contract.StateVoided, f.get("c2").State)
	assert.Equal(t, currency.HoldVoided, f.hold("c2").Status)
	f.balance(w, "96.75", "0")
}

// An op that fails aborts the Update: the contract stays as it was, no
// money moves, and the op's error comes back with the stored contract.
func testUpdateOpFails(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	f.open(newContract("c1", "alice", t0))
	c := f.run("c1", t0.Add(time.Minute))

	for _, tc := range []struct {
		name string
		op   func(c *contract.Contract) currency.Op
		code bourse.Code
	}{
		{"MoreThanHeld", func(c *contract.Contract) currency.Op { return settle(c, "settle/c1/a", "10.01", t0)[0] }, bourse.EInvalid},
		{"NoRevenueAccount", func(c *contract.Contract) currency.Op {
			op := settle(c, "settle/c1/b", "1", t0)[0].(currency.Capture)
			op.To = currency.RevenueID(gpu, "elsewhere")
			return op
		}, bourse.ENotFound},
		{"NoHold", func(c *contract.Contract) currency.Op {
			settle(c, "", "1", t0)
			return currency.Void{Key: "void/other", Hold: "other"}
		}, bourse.ENotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
				return []currency.Op{tc.op(c)}, nil
			})
			var be *bourse.Error
			require.ErrorAs(t, err, &be)
			assert.Equal(t, tc.code, be.Code, "%v", err)
			same(t, c, got)
			same(t, c, f.get("c1"))
			assert.Equal(t, currency.HoldOpen, f.hold("c1").Status)
			f.balance(w, "90", "10")
			f.balance(currency.RevenueID(gpu, server), "0", "0")
		})
	}

	// The contract settles afterwards as if nothing had happened.
	_, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/c1", "4", t0.Add(time.Hour)), nil
	})
	require.NoError(t, err)
	assert.Equal(t, contract.StateSettled, f.get("c1").State)
	f.balance(w, "96", "0")
	f.balance(currency.RevenueID(gpu, server), "4", "0")
}

// A change that returns an error writes nothing, whatever it did to its
// copy, and Update returns the stored contract with that error.
func testNoChange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	f.open(newContract("c1", "alice", t0))
	c := f.run("c1", t0.Add(time.Minute))

	for _, want := range []error{exchange.ErrNoChange, &bourse.Error{Code: bourse.EPermission, Message: "not yours"}} {
		got, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
			settle(c, "settle/c1", "5", t0)
			c.GPUs[0] = 7
			return nil, want
		})
		assert.ErrorIs(t, err, want)
		same(t, c, got)
		same(t, c, f.get("c1"))
	}
	// ErrNoChange with an op: the op is not applied.
	_, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/c1", "5", t0), exchange.ErrNoChange
	})
	assert.ErrorIs(t, err, exchange.ErrNoChange)
	assert.Equal(t, currency.HoldOpen, f.hold("c1").Status)
	f.balance(w, "90", "10")
	same(t, c, f.get("c1"))
}

// Contracts come back as copies: changing one changes nothing stored.
func testCopies(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	c := newContract("c1", "alice", t0)
	c.GPUs = []int{1, 2}
	stored := f.open(c)
	c.GPUs[0] = 9
	stored.GPUs[1] = 9
	got := f.get("c1")
	assert.Equal(t, []int{1, 2}, got.GPUs)
	got.GPUs[0] = 9
	assert.Equal(t, []int{1, 2}, f.get("c1").GPUs)

	updated, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
		c.Reading = &contract.Reading{Contract: "c1", Seq: 1, At: t0}
		return nil, nil
	})
	require.NoError(t, err)
	updated.Reading.Seq, updated.GPUs[0] = 98, 98
	got = f.get("c1")
	assert.Equal(t, uint64(1), got.Reading.Seq)
	assert.Equal(t, []int{1, 2}, got.GPUs)
}

// Contracts lists a client's contracts only, the latest first, up to the
// limit.
func testContracts(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	f.wallet("bob", "100")
	f.wallet("alice2", "100")
	for i := range 5 {
		f.open(newContract(fmt.Sprint("a", i), "alice", t0.Add(time.Duration(i)*time.Microsecond+time.Duration(i))))
	}
	f.open(newContract("b0", "bob", t0.Add(time.Hour)))
	f.open(newContract("x0", "alice2", t0.Add(time.Hour)))

	for _, tc := range []struct {
		client string
		limit  int
		want   []string
	}{
		{"alice", 0, []string{"a4", "a3", "a2", "a1", "a0"}},
		{"alice", -1, []string{"a4", "a3", "a2", "a1", "a0"}},
		{"alice", 2, []string{"a4", "a3"}},
		{"alice", 5, []string{"a4", "a3", "a2", "a1", "a0"}},
		{"alice", 9, []string{"a4", "a3", "a2", "a1", "a0"}},
		{"bob", 0, []string{"b0"}},
		{"alice2", 0, []string{"x0"}},
		{"ali", 0, []string{}},
		{"carol", 3, []string{}},
	} {
		cs, err := f.s.Contracts(f.ctx, tc.client, tc.limit)
		require.NoError(t, err)
		assert.Equal(t, tc.want, ids(cs), "Contracts(%q, %d)", tc.client, tc.limit)
	}
	cs, err := f.s.Contracts(f.ctx, "alice", 1)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	same(t, f.get("a4"), cs[0])
}

// Stale finds running contracts last seen strictly before silentSince or
// whose client's stop is due by now (Stop.By not after it), and accepted
// ones whose start deadline is strictly before now, each once, the
// earliest accepted first, and nothing else.
func testStale(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "1000")
	now := t0.Add(time.Hour)
	silentSince := now.Add(-time.Minute)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }

	type setup struct {
		id    string
		state contract.State
		seen  time.Time // running: last seen
		start time.Time // accepted: start deadline
		stop  time.Time // the client's stop's By, if any
		stale bool
	}
	setups := []setup{
		{id: "silent", state: contract.StateRunning, seen: silentSince.Add(-time.Nanosecond), stale: true},
		{id: "heard", state: contract.StateRunning, seen: silentSince},
		{id: "lively", state: contract.StateRunning, seen: now},
		{id: "never-seen", state: contract.StateRunning, stale: true},
		{id: "late", state: contract.StateAccepted, start: now.Add(-time.Nanosecond), stale: true},
		{id: "due-now", state: contract.StateAccepted, start: now},
		{id: "waiting", state: contract.StateAccepted, start: now.Add(time.Minute)},
		{id: "settled", state: contract.StateSettled, seen: t0, start: t0},
		{id: "voided", state: contract.StateVoided, start: t0},
		{id: "long-late", state: contract.StateAccepted, start: t0, stale: true},
		{id: "long-silent", state: contract.StateRunning, seen: t0, stale: true},
		{id: "stop-due", state: contract.StateRunning, seen: now, stop: now, stale: true},
		{id: "stopping", state: contract.StateRunning, seen: now, stop: now.Add(time.Nanosecond)},
		{id: "stopped-silent", state: contract.StateRunning, seen: t0, stop: t0, stale: true},
		{id: "stopped-settled", state: contract.StateSettled, seen: t0, start: t0, stop: t0},
	}
	// Accepted in an order of their own, that Stale must follow.
	order := []int{6, 3, 12, 9, 0, 10, 14, 1, 4, 11, 7, 2, 13, 8, 5}
	var want []string
	for i, j := range order {
		s := setups[j]
		c := newContract(s.id, "alice", at(i))
		c.State, c.LastSeen, c.StartDeadline = s.state, s.seen, s.start
		if !s.stop.IsZero() {
			c.Stop = &contract.Stop{Reason: contract.ReasonKilled, At: s.stop.Add(-time.Minute), By: s.stop}
		}
		f.open(c)
		if s.stale {
			want = append(want, s.id)
		}
	}
	cs, err := f.s.Stale(f.ctx, now, silentSince, 0)
	require.NoError(t, err)
	assert.Equal(t, want, ids(cs))
	same(t, f.get(want[0]), cs[0])
	cs, err = f.s.Stale(f.ctx, now, silentSince, 3)
	require.NoError(t, err)
	assert.Equal(t, want[:3], ids(cs))

	// Settling one takes it off the list.
	_, err = f.s.Update(f.ctx, "silent", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/silent", "1", now), nil
	})
	require.NoError(t, err)
	cs, err = f.s.Stale(f.ctx, now, silentSince, 0)
	require.NoError(t, err)
	assert.NotContains(t, ids(cs), "silent")
	assert.Len(t, cs, len(want)-1)
}

// Updates of one contract from many goroutines at once serialize: each
// sees the one before, so a counter they all increment ends at their
// number.
func testConcurrentUpdates(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	c := newContract("c1", "alice", t0)
	c.Reading = &contract.Reading{Contract: "c1", At: t0}
	f.open(c)

	const n = 16
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got, err := f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
				c.Reading.Seq++
				c.State = contract.StateRunning
				return nil, nil
			})
			assert.NoError(t, err)
			if err == nil {
				seqs[i] = got.Reading.Seq
			}
		})
	}
	wg.Wait()
	assert.Equal(t, uint64(n), f.get("c1").Reading.Seq)
	seen := map[uint64]bool{}
	for _, s := range seqs {
		assert.False(t, seen[s], "two updates returned seq %d", s)
		seen[s] = true
	}
}

// Concurrent attempts to settle one contract, each under a key of its own,
// capture exactly once: the contract's lock, not the ledger's keys, keeps
// the others out.
func testConcurrentSettle(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	f.open(newContract("c1", "alice", t0))
	f.run("c1", t0.Add(time.Minute))

	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = f.s.Update(f.ctx, "c1", func(c *contract.Contract) ([]currency.Op, error) {
				if c.State == contract.StateSettled {
					return nil, exchange.ErrNoChange
				}
				return settle(c, fmt.Sprint("settle/c1/", i), "2.5", t0.Add(time.Hour)), nil
			})
		})
	}
	wg.Wait()
	settled := 0
	for i, err := range errs {
		switch {
		case err == nil:
			settled++
		case errors.Is(err, exchange.ErrNoChange):
		default:
			t.Errorf("settle %d: %v", i, err)
		}
	}
	assert.Equal(t, 1, settled, "exactly one settles")
	assert.Equal(t, contract.StateSettled, f.get("c1").State)
	h := f.hold("c1")
	assert.Equal(t, currency.HoldCaptured, h.Status)
	f.balance(currency.RevenueID(gpu, server), "2.5", "0")
	f.balance(w, "97.5", "0")
}

// testOpenReservesAllOrNone: Open with a cap's reserve beside the escrow
// (caps.GPUCode) applies both or neither: when the cap cannot take the
// GPUs, the escrow that could be made is not kept, nor the contract; when
// it can, both holds are open with the contract.
func testOpenReservesAllOrNone(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	const capCur currency.Code = "GPU-CAP"
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: capCur, Scale: 0}))
	capW := currency.WalletID(capCur, "alice")
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: capW, Currency: capCur, Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: "cap", From: currency.IssuanceID(capCur), To: capW, Amount: dectest.D("3")})
	require.NoError(t, err)
	capReserve := func(c contract.Contract) currency.Reserve {
		return currency.Reserve{Key: "cap/" + c.ID, Hold: currency.HoldID("gpus/" + c.ID), From: capW,
			Amount: decimal.NewFromInt(int64(c.Terms.GPUs)), Deadline: c.StartDeadline.Add(25 * time.Hour)}
	}

	c1 := newContract("c1", "alice", t0) // 2 GPUs of the 3
	_, created, err := f.s.Open(f.ctx, c1, "", reserve(c1, "escrow/c1"), capReserve(c1))
	require.NoError(t, err)
	require.True(t, created)
	f.balance(w, "90", "10")
	f.balance(capW, "1", "2")

	c2 := newContract("c2", "alice", t0.Add(time.Second)) // 2 more: past the cap
	_, created, err = f.s.Open(f.ctx, c2, "", reserve(c2, "escrow/c2"), capReserve(c2))
	require.Error(t, err)
	assert.False(t, created)
	assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%v", err)
	_, err = f.s.Contract(f.ctx, "c2")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "no contract")
	_, err = f.l.Hold(f.ctx, "c2")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "the escrow that could be made was not kept")
	f.balance(w, "90", "10")
	f.balance(capW, "1", "2")

	// Nothing of the failure is kept under the keys: once the cap has room,
	// the same open goes through.
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: "cap-raise", From: currency.IssuanceID(capCur), To: capW, Amount: dectest.D("1")})
	require.NoError(t, err)
	_, created, err = f.s.Open(f.ctx, c2, "", reserve(c2, "escrow/c2"), capReserve(c2))
	require.NoError(t, err)
	assert.True(t, created)
	f.balance(w, "80", "20")
	f.balance(capW, "0", "4")
}

// testBetween lists every client's contracts accepted in a range, the
// earliest first, a page at a time.
func testBetween(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	f.wallet("bob", "100")
	f.open(newContract("a0", "alice", t0))
	f.open(newContract("b0", "bob", t0.Add(time.Nanosecond)))
	f.open(newContract("a1", "alice", t0.Add(time.Minute)))
	f.open(newContract("b1", "bob", t0.Add(time.Minute)))
	f.open(newContract("a2", "alice", t0.Add(time.Hour)))
	between := func(from, to time.Time, after string, limit int) []string {
		cs, err := f.s.Between(f.ctx, from, to, after, limit)
		require.NoError(t, err)
		return ids(cs)
	}
	assert.Equal(t, []string{"a0", "b0", "a1", "b1", "a2"}, between(t0, t0.Add(2*time.Hour), "", 0))
	assert.Equal(t, []string{"b0", "a1", "b1"}, between(t0.Add(time.Nanosecond), t0.Add(time.Hour), "", 0), "from included, to not")
	assert.Equal(t, []string{"a0", "b0"}, between(t0, t0.Add(2*time.Hour), "", 2))
	assert.Equal(t, []string{"a1", "b1"}, between(t0, t0.Add(2*time.Hour), "b0", 2), "the next page")
	assert.Equal(t, []string{"b1", "a2"}, between(t0, t0.Add(2*time.Hour), "a1", 0), "a tie on time goes by ID")
	assert.Empty(t, between(t0.Add(3*time.Hour), t0.Add(4*time.Hour), "", 0))
}

// testSettled: Settled lists the contracts settled in a span by when they
// settled, then by ID, a page at a time; voided, running and accepted
// ones are not listed.
func testSettled(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	for _, id := range []string{"s0", "s1", "s2", "s3", "v0", "r0", "a0"} {
		f.open(newContract(id, "alice", t0))
	}
	for id, at := range map[string]time.Time{"s0": t0.Add(time.Minute), "s1": t0.Add(2 * time.Minute), "s2": t0.Add(2 * time.Minute), "s3": t0.Add(time.Hour)} {
		f.run(id, t0.Add(time.Second))
		_, err := f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) { return settle(c, "settle/"+id, "1", at), nil })
		require.NoError(t, err)
	}
	_, err := f.s.Update(f.ctx, "v0", func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.Reason, c.Refund, c.SettledAt = contract.StateVoided, contract.ReasonNotStarted, c.Terms.Prepayment, t0.Add(time.Minute)
		return []currency.Op{currency.Void{Key: "void/v0", Hold: "v0"}}, nil
	})
	require.NoError(t, err)
	f.run("r0", t0.Add(time.Second))
	settled := func(from, to time.Time, after string, limit int) []string {
		cs, err := f.s.Settled(f.ctx, from, to, after, limit)
		require.NoError(t, err)
		return ids(cs)
	}
	assert.Equal(t, []string{"s0", "s1", "s2", "s3"}, settled(t0, t0.Add(2*time.Hour), "", 0))
	assert.Equal(t, []string{"s1", "s2"}, settled(t0.Add(2*time.Minute), t0.Add(time.Hour), "", 0), "from included, to not")
	assert.Equal(t, []string{"s0", "s1"}, settled(t0, t0.Add(2*time.Hour), "", 2))
	assert.Equal(t, []string{"s2", "s3"}, settled(t0, t0.Add(2*time.Hour), "s1", 2), "the next page, a tie on time by ID")
	assert.Empty(t, settled(t0.Add(3*time.Hour), t0.Add(4*time.Hour), "", 0))
	cs, err := f.s.Settled(f.ctx, t0, t0.Add(2*time.Hour), "", 1)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	assert.True(t, cs[0].Charge.Equal(dectest.D("1")), "the record whole: %+v", cs[0])
}
