package exchange

import (
	"sync"
	"time"
)

// What the book remembers of servers' answers, so that an offer a server
// has refused is not offered to it again while nothing has changed that
// could change its answer: until the server has more GPUs free than it
// had then, or RematchEvery has passed (its prices may have fallen, its
// bookings ended). A server that did not answer an offer from the book in
// time is quiet: none is offered to it for RematchEvery, so that a server
// that hangs costs a pass one negotiation's wait, not one per offer.
// This is soft state of the instance that matches; another starts
// afresh, asking once what this one knew.

type refusalKey struct{ offer, server string }

type refusalMade struct {
	key   refusalKey
	until time.Time
}

// refusal is a server's refusal of a waiting offer: when it had free GPUs
// free, standing until until.
type refusal struct {
	free  int
	until time.Time
}

type refusals struct {
	mu sync.Mutex
	by map[refusalKey]refusal
	// made are the refusals in the order made, each with its until, for
	// pruning: every refusal stands RematchEvery, so the order is theirs.
	made []refusalMade
	// quietUntil is when each quiet server may be offered the book again.
	quietUntil map[string]time.Time
}

// refuse records that server refused offer with free GPUs free, standing
// until until.
func (r *refusals) refuse(offer, server string, free int, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[refusalKey]refusal{}
	}
	k := refusalKey{offer, server}
	r.by[k] = refusal{free: free, until: until}
	r.made = append(r.made, refusalMade{k, until})
}

// refused reports whether server's refusal of offer stands now that it
// has free GPUs free.
func (r *refusals) refused(offer, server string, free int, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.by[refusalKey{offer, server}]
	return ok && now.Before(f.until) && free <= f.free
}

// silent records that server did not answer an offer in time: it is
// quiet until until.
func (r *refusals) silent(server string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.quietUntil == nil {
		r.quietUntil = map[string]time.Time{}
	}
	r.quietUntil[server] = until
}

// quiet reports whether server is quiet now.
func (r *refusals) quiet(server string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return now.Before(r.quietUntil[server])
}

// prune forgets what no longer stands at now.
func (r *refusals) prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for ; n < len(r.made) && !now.Before(r.made[n].until); n++ {
		if f, ok := r.by[r.made[n].key]; ok && !now.Before(f.until) {
			delete(r.by, r.made[n].key) // not made again since
		}
	}
	r.made = r.made[n:]
	for s, until := range r.quietUntil {
		if !now.Before(until) {
			delete(r.quietUntil, s)
		}
	}
}
