package exchange

import (
	"fmt"
	"testing"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestPaceRule: the interval grows with the servers heard, in whole
// multiples of Heartbeat, so that their steady heartbeats come to at
// most HeartbeatsPerSecond; without that setting it is Heartbeat.
func TestPaceRule(t *testing.T) {
	for _, c := range []struct {
		base      time.Duration
		perSecond int
		n         int
		want      time.Duration
	}{
		{time.Second, 100, 0, time.Second},
		{time.Second, 100, 1, time.Second},
		{time.Second, 100, 100, time.Second},
		{time.Second, 100, 101, 2 * time.Second},
		{time.Second, 100, 1000, 10 * time.Second},
		{time.Second, 100, 10_000, 100 * time.Second},
		{time.Second, 0, 10_000, time.Second},  // not paced: the simulator
		{time.Second, -1, 10_000, time.Second}, // not paced: --heartbeats-per-second -1
		{2 * time.Second, 100, 1000, 10 * time.Second},
		{2 * time.Second, 100, 1001, 12 * time.Second}, // a whole multiple of Heartbeat
		{500 * time.Millisecond, 10, 25, 2500 * time.Millisecond},
	} {
		p := pace{lostAfter: 10 * time.Second, base: c.base, perSecond: c.perSecond}
		got := p.every(c.n)
		if got != c.want {
			t.Errorf("Heartbeat %v, %d a second, %d servers: %v, want %v", c.base, c.perSecond, c.n, got, c.want)
		}
		if c.perSecond > 0 && c.n > 0 && float64(c.n)/got.Seconds() > float64(c.perSecond) {
			t.Errorf("%d servers every %v: more than %d a second", c.n, got, c.perSecond)
		}
	}
}

// TestPacedLiveness: a server paced at 30 s stays live, for routing,
// three of its intervals, and a heartbeat's word that a contract runs
// stands for ServerLostAfter and 29 s more; an unpaced registry keeps
// ServerLostAfter. What a heartbeat says it keeps counts only as far as
// twice the servers heard would give, and a server is told the pace's
// interval once where its heartbeat says a shorter one; a server that
// says none (older than pacing) is never told.
func TestPacedLiveness(t *testing.T) {
	const lostAfter = 10 * time.Second
	t0 := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	hello := func(every time.Duration) protocol.Hello {
		return protocol.Hello{Currency: "CRED", Free: 1, GPUs: []contract.GPU{{Model: "H100"}}, Heartbeat: contract.Duration(every)}
	}

	r := newRegistry(clock, pace{lostAfter: lostAfter, base: time.Second, perSecond: 1})
	for i := range 30 {
		r.update(fmt.Sprint("s", i), hello(0))
	}
	if got := r.helloEvery("s0"); got != 30*time.Second {
		t.Fatalf("30 servers at 1 a second: told %v, want 30s", got)
	}
	if got := r.helloEvery("new"); got != 31*time.Second {
		t.Fatalf("a 31st server's hello: told %v, want 31s", got)
	}
	for _, c := range []struct {
		after time.Duration
		live  int
	}{{89 * time.Second, 30}, {91 * time.Second, 0}} {
		now = t0.Add(c.after)
		if got := r.live(); got != c.live {
			t.Errorf("silent %v at 30 s intervals: %d live, want %d", c.after, got, c.live)
		}
	}
	if got, want := r.heardWithin(), lostAfter+29*time.Second; got != want {
		t.Errorf("heardWithin %v, want %v", got, want)
	}

	// Told once, only where it says a shorter interval.
	if got := r.retell("s1", time.Second); got != 30*time.Second {
		t.Errorf("a server that says 1s: told %v, want 30s", got)
	}
	if got := r.retell("s1", time.Second); got != 0 {
		t.Errorf("told again: %v", got)
	}
	if got := r.retell("s2", 30*time.Second); got != 0 {
		t.Errorf("a server that keeps the pace told %v", got)
	}
	if got := r.retell("s3", 0); got != 0 {
		t.Errorf("a server older than pacing told %v", got)
	}

	now = t0
	plain := newRegistry(clock, pace{lostAfter: lostAfter, base: time.Second})
	plain.update("s0", hello(time.Hour)) // it cannot stretch liveness where nothing is paced
	now = t0.Add(lostAfter + time.Millisecond)
	if got := plain.live(); got != 0 {
		t.Errorf("unpaced: live %d after ServerLostAfter", got)
	}

	now = t0
	few := newRegistry(clock, pace{lostAfter: time.Second, base: time.Second, perSecond: 1})
	few.update("s0", hello(time.Hour))
	// One server heard: a word of an hour counts as far as two would give.
	if got, want := few.lost(), 3*2*time.Second; got != want {
		t.Errorf("a server that says an hour: lost after %v, want %v", got, want)
	}
}
