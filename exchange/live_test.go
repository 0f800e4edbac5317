package exchange

import (
	"testing"
	"time"
)

// A server heard at the cutoff itself is live; one heard the least time
// before it is not (registry_test.go holds the cutoff through an outage).
func TestServerLiveFromItsCutoff(t *testing.T) {
	cut := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		seen time.Time
		live bool
	}{{cut, true}, {cut.Add(time.Nanosecond), true}, {cut.Add(-time.Nanosecond), false}} {
		if got := (serverState{seen: c.seen}).live(cut); got != c.live {
			t.Errorf("heard %v from the cutoff: live %v, want %v", c.seen.Sub(cut), got, c.live)
		}
	}
}
