package exchange

import (
	"testing"
	"time"

	"github.com/bourse/bourse/protocol"
)

// A server heard before an outage of the instance's own (NATS down: no
// server heard at all) stays live through it and ServerLostAfter after it;
// without the outage, it drops out ServerLostAfter after its last word.
func TestRegistryThroughAnOutage(t *testing.T) {
	const lostAfter = 3 * time.Second
	t0 := time.Date(2026, 11, 27, 10, 37, 44, 0, time.UTC)
	now := t0
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	r := newRegistry(func() time.Time { return now }, pace{lostAfter: lostAfter, base: time.Second})
	r.update("cirrus", protocol.Hello{Currency: "CRED"})
	for _, s := range []struct {
		at       float64
		isolated bool
		live     bool
		why      string
	}{
		{1, false, true, "heard a second ago"},
		{2, true, true, "the instance's outage begins"},
		{4, true, true, "the instance hears nothing: the server's silence is its outage"},
		{6, true, true, "still cut off"},
		{8.9, false, true, "heard again less than ServerLostAfter ago"},
		{9.1, false, false, "ServerLostAfter after the outage, and still silent"},
	} {
		now = at(s.at)
		if s.isolated {
			r.isolated(now)
		}
		if got := r.live() == 1; got != s.live {
			t.Errorf("at %.1fs: live %v, want %v: %s", s.at, got, s.live, s.why)
		}
		// What clients read of the servers agrees with whom offers go to.
		if got := len(r.list("CRED")) == 1; got != s.live {
			t.Errorf("at %.1fs: listed %v, want %v: %s", s.at, got, s.live, s.why)
		}
		if got := len(r.sellers()["CRED"]) == 1; got != s.live {
			t.Errorf("at %.1fs: in market data %v, want %v: %s", s.at, got, s.live, s.why)
		}
		if _, got := r.capacity()["CRED"]; got != s.live {
			t.Errorf("at %.1fs: its GPUs counted %v, want %v: %s", s.at, got, s.live, s.why)
		}
	}

	now = t0
	plain := newRegistry(func() time.Time { return now }, pace{lostAfter: lostAfter, base: time.Second})
	plain.update("cirrus", protocol.Hello{Currency: "CRED"})
	now = at(3.1)
	if plain.live() != 0 {
		t.Error("a server silent for ServerLostAfter, heard by an instance that heard all along, is live")
	}
}
