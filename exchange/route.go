package exchange

import (
	"slices"
	"time"

	"github.com/bourse/bourse/contract"
)

// Routing: an offer goes to a few servers, chosen by what they ask.
// The candidates are the live servers of its currency with GPUs of its
// class and a runner for its job, that have room for it now (or, for a
// booking, GPUs enough and take bookings), and whose ask it meets;
// cheapest first, ties spread by the offer's id; at most Config.RouteTo
// of them. With none, the asks of the cheapest servers with room answer
// for them: counter-offers built from the asks (askcounter.go), which ask
// no server anything. Servers that say no ask are asked as they always
// were, after every priced one, within the same bound.

// DefaultRouteTo is how many servers an offer goes to at most.
const DefaultRouteTo = 8

// route is where an offer goes.
type route struct {
	ask     []string   // the servers to ask, at most RouteTo, cheapest first
	preempt []bool     // of each of ask, whether its room for the offer is preemptible work
	counter []askedFor // servers with room whose asks the offer does not meet, cheapest first, at most RouteTo
	fits    bool       // some live server has GPUs enough of the class and runs the job, room or not
	// soonest is the earliest time a busy server that fits says GPUs of
	// the class free up; zero if none says.
	soonest time.Time
}

// askedFor is a server's ask of one class, as a route found it.
type askedFor struct {
	server string
	ask    *contract.Ask
	class  contract.ClassAsk
}

// route finds where offer offerID of terms t goes, at most k servers.
func (r *registry) route(t contract.Terms, offerID string, k int) (out route) {
	r.mu.Lock()
	defer r.mu.Unlock()
	defer out.freeFirst()
	now := r.now()
	cutoff := r.cutoff() // through this instance's own outage (registry.isolated)
	if t.Server != "" {  // named: that server alone, as it stands
		if s, ok := r.servers[t.Server]; ok && s.live(cutoff) && s.Currency == t.Currency && fits(s, t) {
			out.ask, out.fits = []string{t.Server}, true
		}
		return out
	}
	booking := t.StartAt.After(now)
	most := priceAt1(t)
	need := bucket(t.GPUs)
	levels := r.asks.levels(t.Currency, t.Class)
	taken := map[string]bool{}
	for _, l := range levels {
		met := !l.rank.priced || l.rank.price.LessThanOrEqual(most) // a dearer ask cannot be met
		// The buckets that may have room for t first, least room first
		// (the tightest fit leaves the most room elsewhere); then those
		// with some room, for counter-offers; for a booking, which needs
		// GPUs then and not now, those without.
		for b := need; b < roomBuckets; b++ {
			if !met && len(out.counter) >= k {
				break
			}
			if r.scan(&out, l.room[b], t, offerID, k, met, booking, taken, cutoff) {
				return out
			}
		}
		for b := need - 1; b >= 0 && len(out.counter) < k && !booking; b-- {
			r.scan(&out, l.room[b], t, offerID, k, met, booking, taken, cutoff)
		}
		if booking && met && r.scan(&out, l.full, t, offerID, k, met, booking, taken, cutoff) {
			return out
		}
	}
	if len(out.ask) == 0 && len(out.counter) == 0 {
		out.fits, out.soonest = r.busyFits(levels, t, cutoff)
	}
	return out
}

// scan looks through list for route, from a place the offer's id draws,
// adding servers to ask and asks to counter from, and reports whether it
// has k to ask. r.mu is held.
func (r *registry) scan(out *route, list []askRef, t contract.Terms, offerID string, k int, met, booking bool, taken map[string]bool, cutoff time.Time) bool {
	n := len(list)
	start := rotation(offerID, n)
	for j := range n {
		ref := list[(start+j)%n]
		if taken[ref.server] {
			continue
		}
		s, ok := r.servers[ref.server]
		if !ok || !s.live(cutoff) || s.Currency != t.Currency {
			continue
		}
		a := askOf(s.Hello)
		c := a.Classes[ref.class]
		if !c.Enough(t) || !runsOf(s.Hello).Takes(t.Job) {
			continue
		}
		out.fits = true
		if r.demoted(ref.server) {
			// Its record shows accepts it did not start: it is asked
			// only by a client that names it (record.go).
			taken[ref.server] = true
			continue
		}
		switch {
		case met && a.Serves(c, t, booking):
			out.ask = append(out.ask, ref.server)
			out.preempt = append(out.preempt, !booking && c.Free < t.GPUs)
			taken[ref.server] = true
			if len(out.ask) >= k {
				return true
			}
		case booking: // asked or not at all: a booking has no counter-offer from an ask
		case a.Room(c, t) > 0 && c.Priced() && len(out.counter) < k:
			out.counter = append(out.counter, askedFor{server: ref.server, ask: a, class: c})
			taken[ref.server] = true
		case !met && len(out.counter) >= k:
			return false // nothing more this list can give
		}
	}
	return false
}

// rotation is where a scan of a level starts for an offer: a hash of its
// id, so that offers of one moment, made on asks of one moment, spread
// over the servers that ask alike instead of all going to the first, and
// a simulation's routing depends on nothing but its offers.
func rotation(offer string, n int) int {
	if n == 0 {
		return 0
	}
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(offer); i++ {
		h = (h ^ uint32(offer[i])) * 16777619
	}
	return int(h % uint32(n))
}

// freeFirst puts the servers with GPUs free for the offer before those
// whose room is preemptible work, each in its order. The servers are
// asked in this order and the first accept wins (natsvc's router.Ask):
// cheapest first alone would send a guaranteed offer to a cheap server
// to preempt a job there while a dearer one has GPUs idle, and a job
// preempted loses its place and waits again (issue 42: cheapest first
// raised preemptions 8,203 to 8,642 and the preempting policy's median
// wait 10 s to 13 min in posted-vs-surge.yaml).
func (rt *route) freeFirst() {
	if !slices.Contains(rt.preempt, true) {
		return
	}
	free, rest := make([]string, 0, len(rt.ask)), []string{}
	for i, s := range rt.ask {
		if rt.preempt[i] {
			rest = append(rest, s)
		} else {
			free = append(free, s)
		}
	}
	rt.ask = append(free, rest...)
	for i := range rt.preempt {
		rt.preempt[i] = i >= len(free)
	}
}

// busyFits says, where no server has room for t, whether any live server
// fits it at all (else its offer is no_match), and when the soonest of
// those says GPUs of the class free up. It stops at the first that fits
// and says no time.
func (r *registry) busyFits(levels []*askLevel, t contract.Terms, cutoff time.Time) (bool, time.Time) {
	fit, soonest := false, time.Time{}
	looked := 0
	for _, l := range levels {
		for _, list := range append([][]askRef{l.full}, l.room[:]...) {
			for _, ref := range list {
				s, ok := r.servers[ref.server]
				if !ok || !s.live(cutoff) {
					continue
				}
				a := askOf(s.Hello)
				c := a.Classes[ref.class]
				if !c.Enough(t) || !runsOf(s.Hello).Takes(t.Job) {
					continue
				}
				fit = true
				if len(c.FreeAt) == 0 {
					return true, soonest
				}
				if at := c.FreeAt[0].At; soonest.IsZero() || at.Before(soonest) {
					soonest = at
				}
				// The soonest of the first few that fit: enough to tell a
				// client when to come back, without reading every server.
				if looked++; looked >= busyLook {
					return true, soonest
				}
			}
		}
	}
	return fit, soonest
}

// fits says whether server s has GPUs enough of t's class and runs t's
// job, room or not: routing's first question of a server named, and
// matching's of each server with room.
func fits(s serverState, t contract.Terms) bool {
	return t.FitIn(s.GPUs) && runsOf(s.Hello).Takes(t.Job)
}

// askMet says whether server s's ask takes terms t as it stands at now:
// a class of t's with room for it (or GPUs enough, for a booking) whose
// ask t meets; the cheapest such class's price, and whether s says an
// ask at all (a server that says none is taken to, at no price): its
// rank, in the order routing and matching consider asks.
func askMet(s serverState, t contract.Terms, now time.Time) (rank askRank, ok bool) {
	a := askOf(s.Hello)
	booking := t.StartAt.After(now)
	for _, c := range a.Classes {
		if !a.Serves(c, t, booking) {
			continue
		}
		if !c.Priced() {
			return askRank{}, true
		}
		if r := rankOf(c); !ok || r.cmp(rank) < 0 {
			rank, ok = r, true
		}
	}
	return rank, ok
}

// priced says whether server says what it asks.
func (r *registry) priced(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[server]
	return ok && s.Ask != nil && len(s.Ask.Classes) > 0 && s.Ask.Classes[0].Priced()
}

// busyLook is how many busy servers that fit an offer busyFits reads
// for the soonest time GPUs free up.
const busyLook = 64

// named is where a quote of terms t, which name their server, stands by
// that server's ask: to ask (its ask met with room, or it names no
// price), to counter from (room, its ask not met), or neither (no room:
// soonest says when its GPUs free up).
func (r *registry) named(t contract.Terms) route {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out route
	s, ok := r.servers[t.Server]
	if !ok || !s.live(r.cutoff()) || s.Currency != t.Currency || !fits(s, t) {
		return out
	}
	out.fits = true
	if _, met := askMet(s, t, r.now()); met {
		out.ask = []string{t.Server}
		return out
	}
	a := askOf(s.Hello)
	for _, c := range a.Classes {
		if !c.Enough(t) {
			continue
		}
		if room := a.Room(c, t); room > 0 && c.Priced() && !t.StartAt.After(r.now()) {
			out.counter = []askedFor{{server: t.Server, ask: a, class: c}}
			return out
		}
		if len(c.FreeAt) > 0 && (out.soonest.IsZero() || c.FreeAt[0].At.Before(out.soonest)) {
			out.soonest = c.FreeAt[0].At
		}
	}
	return out
}

// took records that server accepted terms t in a negotiation that began
// at began: its ask's room falls by their GPUs until it speaks again, so
// that offers routed and quotes answered meanwhile do not all go where
// the room has just been taken. Its next heartbeat says what it has
// again. A server heard since began may have said so already (an agent
// speaks soon after a claim): its word stands, rather than the claim
// being counted twice, which would leave its room short, and offers
// turned away, until it speaks again. Too much room costs an offer a
// refusal; too little, a contract.
func (r *registry) took(server string, t contract.Terms, began time.Time) {
	r.room(server, t, began, -1)
}

// untook undoes took for a negotiation whose accept made no contract (a
// retried request's, whose first try had made it: the escrow found that
// contract and the accept was cancelled), unless the server spoke since
// began, whose word stands. Without it every retry shrank the server's
// room by a contract that does not exist, until it spoke again.
func (r *registry) untook(server string, t contract.Terms, began time.Time) {
	r.room(server, t, began, +1)
}

// freed gives back to server's room the GPUs of a contract of terms t
// that ended at now (its final reading came), as untook does. A
// heartbeat that already counted them is corrected by the next one: room
// overstated costs a refusal, room understated refused clients while
// GPUs stood free.
func (r *registry) freed(server string, t contract.Terms, now time.Time) {
	r.room(server, t, now, +1)
}

// room moves server's room by t's GPUs in the direction of sign, within
// its classes' GPUs, unless the server spoke since began.
func (r *registry) room(server string, t contract.Terms, began time.Time, sign int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[server]
	if !ok || s.Ask == nil || t.StartAt.After(r.now()) || s.seen.After(began) {
		return
	}
	old := s.Hello
	a := *s.Ask
	a.Classes = slices.Clone(a.Classes)
	left := t.GPUs
	for i := range a.Classes {
		c := &a.Classes[i]
		if left == 0 || !c.Fits(t.Class) {
			continue
		}
		n := min(left, c.Free)
		if sign > 0 {
			n = min(left, c.GPUs-c.Free)
		}
		c.Free += sign * n
		left -= n
	}
	s.Ask = &a
	s.Free = min(max(0, s.Free+sign*t.GPUs), len(s.GPUs))
	r.servers[server] = s
	r.asks.put(server, &old, s.Hello)
}
