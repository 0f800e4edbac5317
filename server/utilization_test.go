package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

func TestUtilizationPostedAt(t *testing.T) {
	base := Posted{P: curve("0", "0.001", "2", "0.003"), Q: contract.Flat(dectest.D("0.01"))}
	for _, tc := range []struct {
		name  string
		k     string
		busy  []int
		wantP contract.Curve
		wantQ contract.Curve
	}{
		{"idle", "1", nil, base.P, base.Q},
		{"k zero", "0", []int{0, 1, 2}, base.P, base.Q},
		// 3 of 6 busy, k = 1: × 1.5.
		{"half busy", "1", []int{0, 1, 4}, curve("0", "0.0015", "2", "0.0045"), contract.Flat(dectest.D("0.015"))},
		// 2 of 6 busy, k = 1: × 4/3, rounded up at the 18th place.
		{"a third busy", "1", []int{0, 1}, curve("0", "0.001333333333333334", "2", "0.004"), contract.Flat(dectest.D("0.013333333333333334"))},
		// all busy, k = 2: × 3.
		{"full", "2", []int{0, 1, 2, 3, 4, 5}, curve("0", "0.003", "2", "0.009"), contract.Flat(dectest.D("0.03"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Utilization{Base: base, K: dectest.D(tc.k)}.PostedAt(testView(tc.busy...))
			assert.True(t, tc.wantP.Equal(r.P), "p = %v", r.P)
			assert.True(t, tc.wantQ.Equal(r.Q), "q = %v", r.Q)
			require.NoError(t, r.Validate())
		})
	}
}

// TestUtilizationPlaces checks the scaled prices are written without the
// zeros the division leaves: a counter-offer's terms keep the places of
// their amounts, in JSON and in the client's table.
func TestUtilizationPlaces(t *testing.T) {
	u := Utilization{Base: Posted{P: contract.Flat(dectest.D("0.20")), Q: curve("0", "0.001", "2", "0.003")}, K: dectest.D("2")}
	for _, tc := range []struct {
		name        string
		busy        []int
		wantP       string
		wantQ       string
		wantCounter string
	}{
		{"idle", nil, `[["0","0.2"]]`, `[["0","0.001"],["2","0.003"]]`, `[["0","0.2"]]`},
		// 3 of 6 busy, k = 2: × 2.
		{"half busy", []int{0, 1, 2}, `[["0","0.4"]]`, `[["0","0.002"],["2","0.006"]]`, `[["0","0.4"]]`},
		// 1 of 6 busy, k = 2: × 4/3, rounded up at the 18th place.
		{"a sixth busy", []int{0}, `[["0","0.266666666666666667"]]`, `[["0","0.001333333333333334"],["2","0.004"]]`, `[["0","0.266666666666666667"]]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := testView(tc.busy...)
			r := u.PostedAt(st)
			p, err := json.Marshal(r.P)
			require.NoError(t, err)
			q, err := json.Marshal(r.Q)
			require.NoError(t, err)
			assert.Equal(t, tc.wantP, string(p))
			assert.Equal(t, tc.wantQ, string(q))

			o := offer()
			o.P = contract.Flat(dectest.D("0.01"))
			got := u.Decide(o, st)
			require.Len(t, got.Counters, 1)
			c, err := json.Marshal(got.Counters[0].P)
			require.NoError(t, err)
			assert.Equal(t, tc.wantCounter, string(c))
		})
	}
}

func TestUtilizationDecide(t *testing.T) {
	u := Utilization{Base: Posted{P: contract.Flat(dectest.D("0.002"))}, K: dectest.D("1")}
	o := offer() // pays 0.002 per GPU-second: the base reserve
	assert.True(t, u.Decide(o, testView()).Accept, "idle: the base price is enough")

	got := u.Decide(o, testView(4, 5)) // 2 of 6 busy: the reserve is 4/3 of the base
	require.False(t, got.Accept)
	require.Len(t, got.Counters, 1)
	assert.True(t, contract.Flat(dectest.D("0.002666666666666667")).Equal(got.Counters[0].P), "counter p = %v", got.Counters[0].P)
	assert.True(t, u.Decide(got.Counters[0], testView(4, 5)).Accept)

	require.NoError(t, u.Validate())
	require.Error(t, Utilization{K: dectest.D("-1")}.Validate())
}
