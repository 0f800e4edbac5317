package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// testCanaries: PutCanary keeps a result of a contract in the store, the
// latest judgment of it in place of the one before, and refuses one of
// a contract it does not have or of another server; Canaries counts them
// by server from a time, with the worst conclusive deviation (an
// overcharge where two are as large), none judged before.
func testCanaries(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "1000")
	ids := []string{"k-pass", "k-fail", "k-under", "k-lost", "k-old"}
	for _, id := range ids {
		f.open(newContract(id, "alice", t0))
	}
	result := func(id string, v canary.Verdict, deviation string, at time.Time) canary.Result {
		return canary.Result{Contract: id, Server: server, At: at, Verdict: v, Why: "test",
			Truth:     canary.Truth{Utilization: dectest.D("0.5"), Duration: contract.Duration(time.Minute), Tolerance: canary.DefaultTolerance},
			Deviation: dectest.D(deviation), ExpectedU: dectest.D("30"), U: dectest.D("30").Mul(dectest.D(deviation).Add(dectest.D("1")))}
	}
	put := func(r canary.Result) {
		t.Helper()
		require.NoError(t, f.s.PutCanary(f.ctx, r))
	}
	put(result("k-pass", canary.Passed, "0.01", t0))
	put(result("k-fail", canary.Inconclusive, "0", t0)) // judged again below
	put(result("k-fail", canary.Failed, "-0.5", t0.Add(time.Minute)))
	put(result("k-under", canary.Failed, "0.5", t0))
	put(result("k-lost", canary.Inconclusive, "0", t0))
	put(result("k-old", canary.Failed, "0.9", t0.Add(-8*24*time.Hour)))

	got, err := f.s.Canaries(f.ctx, t0.Add(-time.Hour))
	require.NoError(t, err)
	worst := dectest.D("0.5")
	assert.Equal(t, map[string]protocol.Canaries{server: {Run: 4, Passed: 1, Failed: 2, Inconclusive: 1, Worst: &worst}}, got,
		"k-fail's second judgment replaced its first; k-old was judged before")
	require.NotNil(t, got[server].Worst)
	assert.Equal(t, "0.5", got[server].Worst.String(), "as large as -0.5, and an overcharge")
	c := got[server]
	assert.True(t, c.Demotes(), "2 failed, 1 passed")

	got, err = f.s.Canaries(f.ctx, t0.Add(30*time.Second))
	require.NoError(t, err)
	worst = dectest.D("-0.5")
	assert.Equal(t, map[string]protocol.Canaries{server: {Run: 1, Failed: 1, Worst: &worst}}, got)

	got, err = f.s.Canaries(f.ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, got)

	err = f.s.PutCanary(f.ctx, result("k-none", canary.Passed, "0", t0))
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	other := result("k-pass", canary.Failed, "1", t0)
	other.Server = "elsewhere"
	err = f.s.PutCanary(f.ctx, other)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	bad := result("k-pass", "maybe", "0", t0)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(f.s.PutCanary(f.ctx, bad)))
	got, err = f.s.Canaries(f.ctx, t0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, got[server].Passed, "the refused results changed nothing")
}
