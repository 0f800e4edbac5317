package exchange

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestAsksKept: an ask is judged once, by every offer routed on it, so
// an honest server whose ask went stale (every offer on it refused) has
// one ask broken, not one per offer; one that breaks at least three and
// more than half of its asks in a window is demoted for the window,
// twice as long at its next demotion, and a strike is forgiven for a
// window of asks kept.
func TestAsksKept(t *testing.T) {
	const w = 30 * time.Second
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	k := newAsksKept(w)
	var ask uint64
	// asks has server send one ask per answer, and answer an offer
	// routed on each.
	asks := func(server string, accepts ...bool) (demoted int) {
		for _, a := range accepts {
			now, ask = now.Add(time.Second), ask+1
			if k.answered(server, ask, a, now) {
				demoted++
			}
		}
		return demoted
	}

	now, ask = now.Add(time.Second), ask+1
	for range 20 {
		assert.False(t, k.answered("stale", ask, false, now), "twenty refusals on one ask")
	}
	assert.False(t, k.demoted("stale", now), "one ask broken")
	assert.Zero(t, asks("stale", false, true, true), "stale twice in a window, kept twice")
	assert.Zero(t, asks("honest", true, false, true, false, true, false), "half its asks broken: kept")
	assert.False(t, k.demoted("honest", now))

	now, ask = now.Add(time.Second), ask+1
	assert.False(t, k.answered("late", ask, false, now))
	assert.False(t, k.answered("late", ask, true, now), "refused, then accepted on the same ask")
	assert.Zero(t, asks("late", false, false), "the first ask counts as kept")
	assert.False(t, k.demoted("late", now))

	assert.Zero(t, asks("liar", false, false), "two asks broken are not enough")
	assert.Equal(t, 1, asks("liar", false), "the third of three")
	assert.True(t, k.demoted("liar", now))
	assert.Zero(t, asks("liar", false, false, false), "asked while demoted: no further strike")
	assert.True(t, k.demoted("liar", now.Add(w-4*time.Second)))
	assert.False(t, k.demoted("liar", now.Add(w)), "a window after its demotion")

	now = now.Add(w)
	assert.Equal(t, 1, asks("liar", false, false, false), "breaks its asks again at once")
	assert.True(t, k.demoted("liar", now.Add(2*w-time.Second)), "twice as long")
	assert.False(t, k.demoted("liar", now.Add(2*w)))

	now = now.Add(2 * w)
	assert.Zero(t, asks("liar", true, true, true), "a window kept")
	now = now.Add(w)
	assert.Zero(t, asks("liar", true))
	assert.Equal(t, 1, asks("liar", false, false, false))
	assert.True(t, k.demoted("liar", now.Add(2*w-time.Second)), "one strike forgiven: twice, not four times")
	assert.False(t, k.demoted("liar", now.Add(2*w)))

	k.prune(now.Add(w << mostStrikes).Add(2 * w))
	assert.NotContains(t, k.by, "liar", "forgotten after the longest demotion, idle")
}
