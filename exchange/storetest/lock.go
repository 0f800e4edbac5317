package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
)

// testLocks: a request id's lock is one negotiation's at a time until
// its deadline; the outcome of a negotiation that made no contract is
// kept for the tries that waited and frees the id; a negotiation whose
// lock was taken over cannot open the contract, and the contract ends
// the lock.
func testLocks(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "100")
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	a := exchange.Lock{ID: "c1", Token: "a", Until: t0.Add(10 * time.Second)}
	b := exchange.Lock{ID: "c1", Token: "b", Until: t0.Add(20 * time.Second)}

	got, err := f.s.Lock(f.ctx, a, t0)
	require.NoError(t, err)
	assert.True(t, got.Mine)
	got, err = f.s.Lock(f.ctx, a, t0.Add(time.Second))
	require.NoError(t, err)
	assert.True(t, got.Mine, "locking again is the holder's")
	got, err = f.s.Lock(f.ctx, b, t0.Add(time.Second))
	require.NoError(t, err)
	assert.False(t, got.Mine)
	assert.Equal(t, "a", got.Holder)
	assert.True(t, got.Until.Equal(a.Until), "%v", got.Until)

	t.Run("Finish", func(t *testing.T) {
		require.NoError(t, f.s.Finish(f.ctx, b, func() []byte { return []byte(`"not b's to finish"`) }))
		got, err := f.s.Lock(f.ctx, b, t0.Add(2*time.Second))
		require.NoError(t, err)
		require.False(t, got.Mine, "b does not hold it: its Finish did nothing")
		require.NoError(t, f.s.Finish(f.ctx, a, func() []byte { return []byte(`{"reply":{}}`) }))
		got, err = f.s.Lock(f.ctx, b, t0.Add(2*time.Second))
		require.NoError(t, err)
		assert.True(t, got.Mine, "a's negotiation ended: the id is free")
		assert.Equal(t, "a", got.Ended)
		assert.JSONEq(t, `{"reply":{}}`, string(got.Outcome), "what a answered, for those that waited on it")
	})
	t.Run("TakenOver", func(t *testing.T) {
		c := newContract("c2", "alice", t0)
		old := exchange.Lock{ID: "c2", Token: "old", Until: t0.Add(time.Second)}
		_, err := f.s.Lock(f.ctx, old, t0)
		require.NoError(t, err)
		taker := exchange.Lock{ID: "c2", Token: "new", Until: t0.Add(time.Minute)}
		got, err := f.s.Lock(f.ctx, taker, t0.Add(2*time.Second))
		require.NoError(t, err)
		require.True(t, got.Mine, "old's deadline has passed")
		_, _, err = f.s.Open(f.ctx, c, "old", reserve(c, "escrow/c2/old"))
		assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "old's negotiation lost its lock: %v", err)
		_, err = f.s.Contract(f.ctx, "c2")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "nothing made")
		f.balance(currency.WalletID(gpu, c.Client), "100", "0") // nothing escrowed
		stored, created, err := f.s.Open(f.ctx, c, "new", reserve(c, "escrow/c2/new"))
		require.NoError(t, err)
		assert.True(t, created)
		same(t, c, stored)
		// The contract ended the lock: a later try locks the id and
		// finds the contract (the House looks it up).
		got, err = f.s.Lock(f.ctx, exchange.Lock{ID: "c2", Token: "later", Until: t0.Add(time.Hour)}, t0.Add(3*time.Second))
		require.NoError(t, err)
		assert.True(t, got.Mine)
	})
	t.Run("AtOnce", func(t *testing.T) {
		var wg sync.WaitGroup
		mine := make(chan string, 16)
		for i := range 16 {
			wg.Go(func() {
				tok := string(rune('A' + i))
				got, err := f.s.Lock(f.ctx, exchange.Lock{ID: "c3", Token: tok, Until: t0.Add(time.Minute)}, t0)
				if assert.NoError(t, err) && got.Mine {
					mine <- tok
				}
			})
		}
		wg.Wait()
		close(mine)
		assert.Len(t, mine, 1, "one of 16 tries at once holds the lock")
	})
}

// testLockFunds: LockFunds locks as Lock does (the lock Open checks) and
// reads the balances as the ledger's Balances does, whatever the lock,
// again alike when the same call is retried.
func testLockFunds(t *testing.T, open Opener) {
	f := newFixture(t, open)
	bob := f.wallet("bob", "100")
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	f.open(newContract("held", "bob", t0)) // 10 of bob's 100 held
	accounts := []currency.AccountID{bob, currency.WalletID(gpu, "nobody"), bob}
	a := exchange.Lock{ID: "c1", Token: "a", Until: t0.Add(10 * time.Second)}
	b := exchange.Lock{ID: "c1", Token: "b", Until: t0.Add(20 * time.Second)}
	want := func(bals []currency.Balance) {
		t.Helper()
		require.Len(t, bals, 3)
		assert.Equal(t, bob, bals[0].Account)
		assert.True(t, bals[0].Available.Equal(dectest.D("90")), "available %s", bals[0].Available)
		assert.True(t, bals[0].Held.Equal(dectest.D("10")), "held %s", bals[0].Held)
		assert.Equal(t, currency.Balance{}, bals[1], "no such account: the zero Balance")
		assert.Equal(t, bals[0], bals[2], "an account asked for twice")
		ledger, err := f.l.Balances(f.ctx, accounts...)
		require.NoError(t, err)
		assert.Equal(t, ledger, bals, "as the ledger reads them")
	}

	got, bals, err := f.s.LockFunds(f.ctx, a, t0, accounts...)
	require.NoError(t, err)
	assert.True(t, got.Mine)
	want(bals)
	got, bals, err = f.s.LockFunds(f.ctx, a, t0.Add(time.Second), accounts...)
	require.NoError(t, err)
	assert.True(t, got.Mine, "the same call again: still the holder's")
	want(bals)
	got, bals, err = f.s.LockFunds(f.ctx, b, t0.Add(time.Second), accounts...)
	require.NoError(t, err)
	assert.False(t, got.Mine)
	assert.Equal(t, "a", got.Holder)
	assert.True(t, got.Until.Equal(a.Until), "%v", got.Until)
	want(bals) // read whatever the lock

	// The lock is the one Open checks.
	c := newContract("c1", "bob", t0)
	_, _, err = f.s.Open(f.ctx, c, "b", reserve(c, "escrow/c1/b"))
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "b does not hold the lock: %v", err)
	f.balance(bob, "90", "10") // nothing escrowed
	require.NoError(t, f.s.Finish(f.ctx, a, func() []byte { return []byte(`{"reply":{}}`) }))
	got, bals, err = f.s.LockFunds(f.ctx, b, t0.Add(2*time.Second))
	require.NoError(t, err)
	assert.True(t, got.Mine, "a's negotiation ended: the id is free")
	assert.Equal(t, "a", got.Ended)
	assert.JSONEq(t, `{"reply":{}}`, string(got.Outcome))
	assert.Empty(t, bals, "no accounts asked for")
	_, created, err := f.s.Open(f.ctx, c, "b", reserve(c, "escrow/c1/b"))
	require.NoError(t, err)
	assert.True(t, created)
	_, bals, err = f.s.LockFunds(f.ctx, exchange.Lock{ID: "c2", Token: "c", Until: t0.Add(time.Minute)}, t0.Add(3*time.Second), bob)
	require.NoError(t, err)
	assert.True(t, bals[0].Available.Equal(dectest.D("80")) && bals[0].Held.Equal(dectest.D("20")), "the escrow read at once: %+v", bals[0])
}
