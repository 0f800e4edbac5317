package exchange

import (
	"testing"
	"time"
)

// The sweep judges silence only once a whole ServerLostAfter has passed
// since the House last ran late: after its start, after a pause between
// two sweeps, and after a pause in the middle of one (market's fault test
// met that last one: a sweep stopped by SIGSTOP during its database calls
// ended on waking, and the next sweep, a moment later, judged contracts
// whose readings were still waiting in the stream).
func TestPauses(t *testing.T) {
	const every, lostAfter = time.Second, 3 * time.Second
	t0 := time.Date(2026, 11, 25, 4, 10, 21, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	p := pauses{outage: t0, last: t0}
	sweep := func(began, ended float64) bool {
		judge := p.begin(at(began), every, at(began).Add(-lostAfter))
		p.end(at(began), at(ended), every)
		return judge
	}
	for _, s := range []struct {
		began, ended float64
		judge        bool
		why          string
	}{
		{1, 1.01, false, "just started"},
		{2, 2.01, false, "just started"},
		{3.1, 3.11, true, "ServerLostAfter since the start"},
		{4.1, 4.11, true, "sweeping on time"},
		{5.1, 11.1, true, "a sweep paused in its middle judges as it began"},
		{11.3, 11.31, false, "after a sweep paused in its middle"},
		{14.0, 14.01, false, "less than ServerLostAfter after it"},
		{14.2, 14.21, true, "ServerLostAfter after it"},
		{21.2, 21.21, false, "after a pause between sweeps"},
		{22.2, 22.21, false, "less than ServerLostAfter after it"},
		{24.3, 24.31, true, "ServerLostAfter after it"},
	} {
		if got := sweep(s.began, s.ended); got != s.judge {
			t.Errorf("sweep at %.2fs (ended %.2fs): judges silence %v, want %v: %s", s.began, s.ended, got, s.judge, s.why)
		}
	}
}
