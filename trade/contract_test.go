package trade_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/trade"
)

// A clone's changes of state never reach the original: the stores hand
// out clones of what they keep, and the SQL store decides on a clone of
// the contract it wrote last.
func TestCloneSharesNothingWritten(t *testing.T) {
	at := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	orig := trade.Contract{ID: "c-1", GPUs: make([]int, 2, 4), CapHolds: make([]string, 1, 4), SpendHolds: make([]string, 1, 4),
		Reading: &trade.Reading{Seq: 1}, Stuck: &trade.Stuck{Since: at, Attempts: 1},
		Stop: &trade.Stop{Reason: trade.ReasonSuspended, At: at, By: at.Add(time.Second)}}
	c := orig.Clone()
	c.GPUs[0] = 7
	_ = append(c.GPUs, 9)
	c.CapHolds[0] = "h"
	_ = append(c.CapHolds, "x")
	_ = append(c.SpendHolds, "y")
	c.Reading.Seq = 2
	c.Stuck.Attempts = 2
	c.Stop.Reason = trade.ReasonKilled
	require.Equal(t, []int{0, 0}, orig.GPUs)
	require.Equal(t, []int{0, 0, 0}, orig.GPUs[:3], "append into the clone wrote the original's spare capacity")
	require.Equal(t, []string{"", ""}, orig.CapHolds[:2])
	require.Equal(t, []string{"", ""}, orig.SpendHolds[:2])
	require.Equal(t, uint64(1), orig.Reading.Seq)
	require.Equal(t, 1, orig.Stuck.Attempts)
	require.Equal(t, trade.ReasonSuspended, orig.Stop.Reason)

	var zero trade.Contract
	require.Equal(t, zero, zero.Clone(), "nil stays nil")
}
