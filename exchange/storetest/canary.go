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
// by server from a time, the passes judged after the latest failure, and
// the worst conclusive deviation (an overcharge where two are as large),
// none judged before.
func testCanaries(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.wallet("alice", "1000")
	ids := []string{"k-pass", "k-fail", "k-under", "k-lost", "k-old", "k-after"}
	for _, id := range ids {
		f.open(newContract(id, "alice", t0))
	}
	other := newContract("k-other", "alice", t0)
	other.Server, other.Terms.Server = "srv2", "srv2"
	f.open(other)
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
	put(result("k-after", canary.Passed, "0", t0.Add(2*time.Minute)))
	passed := result("k-other", canary.Passed, "0", t0.Add(3*time.Minute))
	passed.Server = "srv2"
	put(passed)

	got, err := f.s.Canaries(f.ctx, t0.Add(-time.Hour))
	require.NoError(t, err)
	worst, zero := dectest.D("0.5"), dectest.D("0")
	assert.Equal(t, map[string]protocol.Canaries{
		server: {Run: 5, Passed: 2, Failed: 2, Inconclusive: 1, PassedSince: 1, Worst: &worst},
		"srv2": {Run: 1, Passed: 1, Worst: &zero},
	}, got, "k-fail's second judgment replaced its first; k-old was judged before; k-pass before the latest failure, k-after after it; "+
		"srv2's pass, later than srv's failure, is not since a failure of its own")
	require.NotNil(t, got[server].Worst)
	assert.Equal(t, "0.5", got[server].Worst.String(), "as large as -0.5, and an overcharge")
	c := got[server]
	assert.True(t, c.Demotes(), "1 passed since the latest failure")

	got, err = f.s.Canaries(f.ctx, t0.Add(30*time.Second))
	require.NoError(t, err)
	worst = dectest.D("-0.5")
	assert.Equal(t, map[string]protocol.Canaries{server: {Run: 2, Passed: 1, Failed: 1, PassedSince: 1, Worst: &worst},
		"srv2": {Run: 1, Passed: 1, Worst: &zero}}, got)

	got, err = f.s.Canaries(f.ctx, t0.Add(time.Hour))
	require.NoError(t, err)
	assert.Empty(t, got)

	err = f.s.PutCanary(f.ctx, result("k-none", canary.Passed, "0", t0))
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	wrong := result("k-pass", canary.Failed, "1", t0)
	wrong.Server = "elsewhere"
	err = f.s.PutCanary(f.ctx, wrong)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	bad := result("k-pass", "maybe", "0", t0)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(f.s.PutCanary(f.ctx, bad)))
	got, err = f.s.Canaries(f.ctx, t0.Add(-time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 2, got[server].Passed, "the refused results changed nothing")
}
