package contract_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

// A clone's changes of state never reach the original: the stores hand
// out clones of what they keep, and the SQL store decides on a clone of
// the contract it wrote last.
func TestCloneSharesNothingWritten(t *testing.T) {
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	orig := contract.Contract{ID: "c-1", GPUs: make([]int, 2, 4), CapHolds: make([]string, 1, 4), SpendHolds: make([]string, 1, 4),
		Reading: &contract.Reading{Seq: 1}, Stuck: &contract.Stuck{Since: at, Attempts: 1},
		Stop: &contract.Stop{Reason: contract.ReasonSuspended, At: at, By: at.Add(time.Second)}}
	c := orig.Clone()
	c.GPUs[0] = 7
	_ = append(c.GPUs, 9)
	c.CapHolds[0] = "h"
	_ = append(c.CapHolds, "x")
	_ = append(c.SpendHolds, "y")
	c.Reading.Seq = 2
	c.Stuck.Attempts = 2
	c.Stop.Reason = contract.ReasonKilled
	require.Equal(t, []int{0, 0}, orig.GPUs)
	require.Equal(t, []int{0, 0, 0}, orig.GPUs[:3], "append into the clone wrote the original's spare capacity")
	require.Equal(t, []string{"", ""}, orig.CapHolds[:2])
	require.Equal(t, []string{"", ""}, orig.SpendHolds[:2])
	require.Equal(t, uint64(1), orig.Reading.Seq)
	require.Equal(t, 1, orig.Stuck.Attempts)
	require.Equal(t, contract.ReasonSuspended, orig.Stop.Reason)

	var zero contract.Contract
	require.Equal(t, zero, zero.Clone(), "nil stays nil")
}
