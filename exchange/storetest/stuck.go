package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// An op that fails in an Update leaves no trace under its key: once the
// cause is gone, the same change under the same key succeeds. (A failure
// kept under the settle key would make the contract unsettleable for
// ever.)
func testFailureNotKept(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.wallet("alice", "100")
	f.open(newContract("c1", "alice", t0))
	f.run("c1", t0.Add(time.Minute))
	elsewhere := currency.RevenueID(gpu, "elsewhere")
	change := func(c *contract.Contract) ([]currency.Op, error) {
		op := settle(c, "settle/c1", "3", t0.Add(time.Hour))[0].(currency.Capture)
		op.To = elsewhere
		return []currency.Op{op}, nil
	}
	_, err := f.s.Update(f.ctx, "c1", change)
	require.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	assert.Equal(t, contract.StateRunning, f.get("c1").State)

	_, err = f.l.OpenAccount(f.ctx, currency.Account{ID: elsewhere, Currency: gpu, Kind: currency.Revenue})
	require.NoError(t, err)
	got, err := f.s.Update(f.ctx, "c1", change)
	require.NoError(t, err, "the settle key must not keep the first failure")
	assert.Equal(t, contract.StateSettled, got.State)
	f.balance(w, "97", "0")
	f.balance(elsewhere, "3", "0")
}

// Stale skips a contract until its Stuck.Retry and lists the stuck ones
// after the others, so that contracts that keep failing do not hide the
// others; Stuck lists those that still hold their escrow, the longest
// stuck first.
func testStuck(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "1000")
	now := t0.Add(time.Hour)
	silentSince := now.Add(-time.Minute)
	mark := func(id string, since, retry time.Time) {
		_, err := f.s.Update(f.ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
			c.Stuck = &contract.Stuck{Since: since, Attempts: 1, Retry: retry, Error: "boom"}
			return nil, nil
		})
		require.NoError(t, err)
	}
	for i, id := range []string{"waits", "due", "fine", "late-waits", "late-due", "settled"} {
		c := newContract(id, "alice", t0.Add(time.Duration(i)*time.Second))
		f.open(c)
		if id != "late-waits" && id != "late-due" {
			f.run(id, t0) // silent since
		}
	}
	mark("waits", t0.Add(3*time.Second), now.Add(time.Second))
	mark("due", t0.Add(2*time.Second), now)
	mark("late-waits", t0.Add(time.Second), now.Add(time.Minute))
	mark("late-due", t0.Add(4*time.Second), now.Add(-time.Second))
	mark("settled", t0, now.Add(time.Hour))
	_, err := f.s.Update(f.ctx, "settled", func(c *contract.Contract) ([]currency.Op, error) {
		return settle(c, "settle/settled", "1", now), nil
	})
	require.NoError(t, err)

	cs, err := f.s.Stale(f.ctx, now, silentSince, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"fine", "due", "late-due"}, ids(cs), "contracts waiting to be retried are skipped, the others come first")

	cs, err = f.s.Stuck(f.ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"late-waits", "due", "waits", "late-due"}, ids(cs), "held escrow, longest stuck first")
	require.NotNil(t, cs[0].Stuck)
	assert.Equal(t, "boom", cs[0].Stuck.Error)
	cs, err = f.s.Stuck(f.ctx, 2)
	require.NoError(t, err)
	assert.Len(t, cs, 2)
	assert.NotNil(t, f.get("settled").Stuck, "the record keeps its history")
}
