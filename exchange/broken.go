package exchange

import (
	"sync"
	"time"
)

// An ask binds nothing: its server's accept does. So a server could post
// an ask cheaper than any it keeps, take the first of every offer's
// RouteTo places, and refuse, or counter dearer, or say nothing: eight
// such servers would keep every offer from the honest ninth. What the
// exchange cannot prevent it can remember: a server that does not keep
// most of the asks it sends breaks them, and for a while is asked only
// where no server that keeps its own would be (route.go), and after all
// of those from the book (candidates).
//
// An ask is judged once, by the offers routed on it: kept if its server
// accepted one of them, broken if it answered them all with anything
// else. An honest server's ask goes stale between its heartbeats (it
// took other work; another instance won its GPUs; this instance was
// paused and routed on what it heard before): every offer routed on it
// then is refused, but that is one ask broken, and the next says it is
// full. A server that posts the same room again and again and refuses
// breaks one ask per heartbeat.

const (
	// brokenLeast is how many of its asks within one window a server
	// must have broken before it is demoted.
	brokenLeast = 3
	// mostStrikes bounds how much longer each demotion in a row lasts:
	// window, twice it, … up to 2^mostStrikes windows.
	mostStrikes = 4
)

// asksKept tracks, per server, its asks that offers were routed on and
// answered, and how many it broke, in windows of window; a server that
// broke at least brokenLeast and more than half of them is demoted for
// window, doubled for each demotion since it last kept its asks for a
// whole window (strikes): a server that lies again as soon as its
// demotion ends costs fewer offers each time.
type asksKept struct {
	window time.Duration

	mu sync.Mutex
	by map[string]*askRecord
}

// askRecord is one server's record.
type askRecord struct {
	from        time.Time // the current window began
	asks, broke int       // its asks judged in the window, and those broken
	ask         uint64    // the ask being judged (registry.update's count)
	judged      verdict   // what its answers so far say of it
	strikes     int       // demotions since a window in which it kept its asks
	demoted     time.Time // routed after the others until then
}

// verdict is what the answers to offers routed on one ask say of it.
type verdict int

const (
	unjudged verdict = iota
	kept
	broken
)

func newAsksKept(window time.Duration) *asksKept {
	return &asksKept{window: window, by: map[string]*askRecord{}}
}

// answered records that server, asked at now an offer routed on its ask
// number ask, accepted it or not, and reports whether this answer has
// the server demoted.
func (k *asksKept) answered(server string, ask uint64, accepted bool, now time.Time) (demoted bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.by[server]
	if rec == nil {
		rec = &askRecord{from: now}
		k.by[server] = rec
	}
	if now.Before(rec.demoted) {
		// Asked while demoted, only because no other server could be:
		// it counts neither way.
		return false
	}
	if now.Sub(rec.from) >= k.window {
		if rec.broke == 0 && rec.asks > 0 {
			rec.strikes = max(rec.strikes-1, 0) // a window of asks kept
		}
		rec.from, rec.asks, rec.broke = now, 0, 0
	}
	switch {
	case ask < rec.ask:
		return false // an answer on an ask already judged
	case ask > rec.ask:
		rec.ask, rec.judged = ask, unjudged
	}
	switch {
	case accepted && rec.judged == broken:
		rec.broke-- // kept after all
		rec.judged = kept
	case accepted && rec.judged == unjudged:
		rec.asks++
		rec.judged = kept
	case !accepted && rec.judged == unjudged:
		rec.asks++
		rec.broke++
		rec.judged = broken
	}
	if rec.judged != broken || rec.broke < brokenLeast || 2*rec.broke <= rec.asks {
		return false
	}
	rec.demoted = now.Add(k.window << min(rec.strikes, mostStrikes))
	rec.strikes++
	rec.from, rec.asks, rec.broke = now, 0, 0
	return true
}

// demoted reports whether server stands demoted at now.
func (k *asksKept) demoted(server string, now time.Time) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.by[server]
	return rec != nil && now.Before(rec.demoted)
}

// prune forgets the servers asked nothing for the longest demotion: a
// server that went away, or one that has long kept its asks.
func (k *asksKept) prune(now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	idle := k.window << mostStrikes
	for s, rec := range k.by {
		if now.Sub(rec.from) >= idle && now.Sub(rec.demoted) >= idle {
			delete(k.by, s)
		}
	}
}
