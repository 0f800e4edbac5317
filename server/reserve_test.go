package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// TestReserve: a policy's reserve is its posted curve, scaled by how full
// the server is for Utilization, through every layer of a built stack.
func TestReserve(t *testing.T) {
	gpus := make([]contract.GPU, 4)
	for i := range gpus {
		gpus[i] = contract.GPU{Index: i, Model: "H100"}
	}
	half := View{GPUs: gpus, Free: gpus[:2]}
	pol, err := PolicyConfig{Kind: "utilisation", P: [][]string{{"0", "0.0010"}}, K: "2", Preempt: true,
		Bookings: &BookingsConfig{}, FairUse: FairUseConfig{MaxRunning: 2}}.Build()
	require.NoError(t, err)
	r, ok := Reserve(pol, half)
	require.True(t, ok)
	// 0.0010 × (1 + 2·2/4)
	assert.True(t, r.P.Eval(dectest.D("1")).Equal(dectest.D("0.002")), "%v", r.P)

	r, ok = Reserve(Posted{P: contract.Flat(dectest.D("0.5"))}, half)
	require.True(t, ok)
	assert.Equal(t, "0.5", r.P[0].Y.String())

	_, ok = Reserve(oddPolicy{}, half)
	assert.False(t, ok, "a policy of another kind has no posted reserve")
}

type oddPolicy struct{}

func (oddPolicy) Decide(contract.Terms, View) Decision { return Decision{} }
