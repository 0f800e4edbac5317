package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEngine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := NewEngine(t0)
	var got []string
	note := func(s string) func() { return func() { got = append(got, s+"@"+e.Now().Sub(t0).String()) } }
	e.After(2*time.Second, note("b"))
	e.After(time.Second, note("a"))
	e.After(2*time.Second, note("c")) // ties run in the order scheduled
	n := 0
	e.Every(1500*time.Millisecond, func() bool {
		n++
		note("tick")()
		return n < 3
	})
	e.After(time.Second, func() { e.After(0, note("now")) })
	e.Run(t0.Add(time.Hour))
	assert.Equal(t, []string{"a@1s", "now@1s", "tick@1.5s", "b@2s", "c@2s", "tick@3s", "tick@4.5s"}, got)
	assert.Equal(t, t0.Add(time.Hour), e.Now(), "the clock stops at until")

	e.After(time.Minute, note("late"))
	e.Run(t0.Add(time.Hour + 30*time.Second))
	assert.Equal(t, t0.Add(time.Hour+30*time.Second), e.Now())
	assert.Len(t, got, 7, "the late event is after until")
	e.Run(t0.Add(2 * time.Hour))
	assert.Equal(t, "late@1h1m0s", got[7])
}

// TestEngineRunContext: a run stops once its context is done, even one
// whose events never let the clock move (an event that schedules itself
// at once, for ever), within a thousand events, and says why.
func TestEngineRunContext(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := NewEngine(start)
	ctx, cancel := context.WithCancel(context.Background())
	var spin func()
	spin = func() {
		if e.Events() == 5000 {
			cancel()
		}
		e.After(0, spin)
	}
	e.After(0, spin)
	err := e.RunContext(ctx, start.Add(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	assert.LessOrEqual(t, e.Events(), uint64(5000+1024))
	assert.Equal(t, start, e.Now(), "the clock where it stopped")
}

// TestEngineAlarms: alarms at one time run before the other events, in
// order of key whatever order they were set in, and an alarm set twice
// for one time runs once.
func TestEngineAlarms(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := NewEngine(t0)
	var got []string
	e.OnAlarm(func(key int) { got = append(got, fmt.Sprintf("alarm%d@%v", key, e.Now().Sub(t0))) })
	e.After(time.Second, func() { got = append(got, "event@1s") })
	e.Alarm(t0.Add(time.Second), 2)
	e.Alarm(t0.Add(time.Second), 1)
	e.Alarm(t0.Add(time.Second), 2)
	e.Alarm(t0.Add(2*time.Second), 0)
	e.After(1500*time.Millisecond, func() { e.Alarm(t0, 3) }) // in the past: now
	e.Run(t0.Add(time.Hour))
	assert.Equal(t, []string{"alarm1@1s", "alarm2@1s", "event@1s", "alarm3@1.5s", "alarm0@2s"}, got)

	// An alarm set again for now by what its run set going runs again.
	got = nil
	again := true
	e.OnAlarm(func(key int) {
		got = append(got, fmt.Sprintf("alarm%d", key))
		if again {
			again = false
			e.Alarm(e.Now(), key)
		}
	})
	e.Alarm(e.Now().Add(time.Second), 5)
	e.Alarm(e.Now().Add(time.Second), 5)
	e.Run(e.Now().Add(time.Hour))
	assert.Equal(t, []string{"alarm5", "alarm5"}, got, "once for the two set before it ran, once for the one set by it")
}
