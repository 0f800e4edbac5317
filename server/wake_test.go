package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
)

// TestWake: a node says when it next has something to do by itself, and
// a driver that ticks it only then stops each job at its exact moment:
// the job's end, its time limit, the nanosecond its prepayment runs out.
func TestWake(t *testing.T) {
	t.Run("Idle", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		assert.True(t, tn.n.Wake().IsZero(), "nothing to do until told")
	})
	t.Run("JobEnds", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		start := tn.now
		tn.start("o1", "c1", job(1, "1", 90*time.Second, 10*time.Minute))
		tn.start("o2", "c2", job(1, "1", 30*time.Second, 10*time.Minute))
		assert.Equal(t, start.Add(30*time.Second), tn.n.Wake())
		tn.now = start.Add(30 * time.Second)
		finals := tn.stop(tn.n.Tick(tn.now).Stops)
		require.Len(t, finals, 1)
		assert.Equal(t, contract.ReasonCompleted, finals[0].Reason)
		assert.Equal(t, start.Add(90*time.Second), tn.n.Wake(), "the other's end")
	})
	t.Run("TimeLimit", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		start := tn.now
		tn.start("o1", "c1", job(1, "1", time.Hour, 100*time.Second))
		assert.Equal(t, start.Add(100*time.Second), tn.n.Wake())
	})
	t.Run("PrepaymentRunsOut", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		start := tn.now
		terms := job(2, "0.5", time.Hour, 2*time.Hour)
		// 0.002 a GPU-second at one busy GPU: 0.002 a second; 0.50 lasts
		// 250 s, when the running charge first truncates to 0.50.
		terms.Prepayment = dectest.D("0.50")
		tn.start("o1", "c1", terms)
		at := tn.n.Wake()
		assert.Equal(t, start.Add(250*time.Second), at)

		tn.now = at.Add(-time.Nanosecond)
		due := tn.n.Tick(tn.now)
		assert.Empty(t, due.Stops, "a nanosecond before, it has not run out")
		tn.now = at
		due = tn.n.Tick(tn.now)
		require.Len(t, due.Stops, 1, "ticked at its wake, not when a reading was due")
		assert.Equal(t, contract.ReasonExhausted, due.Stops[0].Reason)
		finals := tn.stop(due.Stops)
		assert.Equal(t, "0.5", finals[0].U.Mul(dectest.D("0.002")).String(), "charged the whole prepayment")
		assert.True(t, tn.n.Wake().IsZero())
	})
	t.Run("Halted", func(t *testing.T) {
		tn := newTestNode(t, Posted{})
		tn.start("o1", "c1", job(1, "1", time.Hour, 2*time.Hour))
		tn.advance(time.Minute)
		require.NoError(t, tn.n.Control(tn.now, "c1", contract.ReasonKilled))
		assert.False(t, tn.n.Wake().After(tn.now), "a halted job is due now")
	})
}
