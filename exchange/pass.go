package exchange

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse/contract"
)

// When the book is offered: a currency's pass is due at once when a
// contract of one of its servers ends (its GPUs free up: a contract's end
// costs its client money, so no party makes them at will), and every
// RematchEvery for every live server, whose prices may have fallen. A
// heartbeat or hello that shows a server with more room makes its
// currency's pass due too, but no sooner than MatchGap after the last
// one: a server flapping its free count cannot make the exchange offer
// the book faster than that. A pass that stopped at its bounds with room
// left goes on from where it stopped, MatchGap later.

// rooms are the servers that may have room for waiting offers since the
// last pass, and each currency's passes.
type rooms struct {
	mu sync.Mutex
	// ended are the servers a contract of which ended: their pass is due
	// at once. One whose heartbeats still show nothing free stays marked
	// until they do.
	ended map[string]bool
	// grew are the servers whose heartbeats showed more room, or that
	// said hello, or whose last pass stopped at its bounds: their pass
	// is due MatchGap after their currency's last.
	grew map[string]bool
	all  time.Time            // when every live server was last taken
	last map[string]time.Time // currency → its last pass
	// resume is where each currency's last pass stopped, its bounds
	// reached with room left; absent where it went to the end.
	resume map[string]*contract.Waiting
}

// pass is one currency's book to offer, to servers with free GPUs.
type pass struct {
	currency string
	servers  map[string]serverState
}

// mark has server's currency's pass due at once: a contract of its ended.
func (r *rooms) mark(server string) { r.add(&r.ended, server) }

// grow has server's currency's pass due, MatchGap after its last.
func (r *rooms) grow(server string) { r.add(&r.grew, server) }

func (r *rooms) add(set *map[string]bool, servers ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if *set == nil {
		*set = map[string]bool{}
	}
	for _, s := range servers {
		(*set)[s] = true
	}
}

// take returns the passes due at now, by currency, each with its servers
// that have GPUs free (states says how they stand; live lists every live
// server, taken every every). A currency due only by heartbeats within
// gap of its last pass keeps its servers marked for a later call.
func (r *rooms) take(now time.Time, every, gap time.Duration, live func() []string, states func([]string) map[string]serverState) []pass {
	r.mu.Lock()
	defer r.mu.Unlock()
	urgent, soft := r.ended, r.grew
	r.ended, r.grew = map[string]bool{}, map[string]bool{}
	if urgent == nil {
		urgent = map[string]bool{}
	}
	if now.Sub(r.all) >= every {
		r.all = now
		for _, id := range live() {
			urgent[id] = true
		}
	}
	if len(urgent)+len(soft) == 0 {
		return nil
	}
	ids := slices.Collect(maps.Keys(urgent))
	for id := range soft {
		ids = append(ids, id)
	}
	byCur := map[string]*pass{}
	due := map[string]bool{}
	for id, s := range states(ids) {
		if s.Free == 0 {
			if urgent[id] {
				r.ended[id] = true // its freed GPUs are not in its heartbeats yet
			}
			continue
		}
		p := byCur[s.Currency]
		if p == nil {
			p = &pass{currency: s.Currency, servers: map[string]serverState{}}
			byCur[s.Currency] = p
		}
		p.servers[id] = s
		due[s.Currency] = due[s.Currency] || urgent[id]
	}
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	var out []pass
	for _, cur := range slices.Sorted(maps.Keys(byCur)) {
		p := byCur[cur]
		if !due[cur] && now.Sub(r.last[cur]) < gap {
			for id := range p.servers {
				r.grew[id] = true
			}
			continue
		}
		r.last[cur] = now
		out = append(out, *p)
	}
	return out
}

// resumeAt is where cur's next pass starts: after the waiting offer
// returned, or at the top if nil.
func (r *rooms) resumeAt(cur string) *contract.Waiting {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.resume[cur]
}

// stopped records where cur's pass stopped: after the waiting offer at,
// its bounds reached with servers still having room (marked for the next
// pass), or at the end of the book (at nil).
func (r *rooms) stopped(cur string, at *contract.Waiting, servers []string) {
	r.mu.Lock()
	if r.resume == nil {
		r.resume = map[string]*contract.Waiting{}
	}
	if at == nil {
		delete(r.resume, cur)
	} else {
		w := *at
		r.resume[cur] = &w
	}
	r.mu.Unlock()
	if len(servers) > 0 {
		r.add(&r.grew, servers...)
	}
}
