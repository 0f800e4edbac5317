package exchange

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// registry is this instance's view of the live servers, fed by hellos and
// heartbeats. It is soft state: every instance hears every heartbeat, and a
// server that stops speaking drops out after lost() (pace.go).
type registry struct {
	now  func() time.Time
	pace pace

	mu      sync.Mutex
	servers map[string]serverState
	// order is the servers' ids, sorted: match lists them in this order,
	// and a market of a thousand servers would otherwise sort a thousand
	// ids for every offer.
	order []string
	// known caches whether a server has registered in a currency (has
	// its revenue account): true for good, false until the time stored
	// in unknownUntil, after which the ledger is asked again.
	known        map[string]bool // server + "/" + currency
	unknownUntil map[string]time.Time
	// cutFrom and cutLast are when this instance's last outage (heard no
	// server at all) began and was last seen (isolated).
	cutFrom, cutLast time.Time
	// asks indexes the servers' asks for routing (asks.go, route.go).
	asks *asks
	// records are the servers' records (record.go), by server.
	records map[string]*protocol.Record
	// every is the longest heartbeat interval this instance knows a
	// server may keep: what the pace gives its servers, or what a
	// heartbeat says it keeps, whichever is longer. It never shrinks
	// (pace.go). told is the interval each server was last told.
	every time.Duration
	told  map[string]time.Duration
}

type serverState struct {
	// Hello is the server's room as this instance reckons it: what it
	// last said, less the contracts won there and plus those ended since
	// (route.go, room).
	protocol.Hello
	seen time.Time
	// word is what the server last said in full, which its heartbeats
	// heard by their time alone say again (again).
	word protocol.Hello
}

func newRegistry(now func() time.Time, p pace) *registry {
	return &registry{now: now, pace: p, every: p.base, servers: map[string]serverState{},
		known: map[string]bool{}, unknownUntil: map[string]time.Time{}, asks: newAsks(),
		told: map[string]time.Duration{}}
}

// isolated records that this instance heard no server at all at now
// (its connection to NATS is down). Every server was as silent to it as
// it was deaf: a server live when the outage began stays live through it
// and lost() after it, time for its next heartbeat.
func (r *registry) isolated(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.cutLast) > r.lost() {
		r.cutFrom = now
	}
	r.cutLast = now
}

// cutoff is when a server last heard from must have spoken to count as
// live: lost() ago, or lost() before this instance's outage began if it
// ended less than lost() ago. r.mu must be held.
func (r *registry) cutoff() time.Time {
	now, lost := r.now(), r.lost()
	c := now.Add(-lost)
	if from := r.cutFrom.Add(-lost); !r.cutLast.IsZero() && now.Sub(r.cutLast) < lost && from.Before(c) {
		return from
	}
	return c
}

// registered says what the registry knows of whether server has
// registered in cur: yes, no (lately), or nothing (ask the ledger).
func (r *registry) registered(server, cur string) (yes, known bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := server + "/" + cur
	if r.known[k] {
		return true, true
	}
	return false, r.now().Before(r.unknownUntil[k])
}

// remember records whether server has registered in cur; a no is kept
// for ServerLostAfter.
func (r *registry) remember(server, cur string, yes bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := server + "/" + cur
	if yes {
		r.known[k] = true
		delete(r.unknownUntil, k)
		return
	}
	r.unknownUntil[k] = r.now().Add(r.pace.lostAfter)
}

// update records server id's hello or heartbeat, and reports whether it
// has more room than it had: it is new, back after silence, or has more
// GPUs free.
func (r *registry) update(id string, h protocol.Hello) (roomGrew bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	old, ok := r.servers[id]
	if !ok {
		i, _ := slices.BinarySearch(r.order, id)
		r.order = slices.Insert(r.order, i, id)
		r.asks.put(id, nil, h)
	} else {
		r.asks.put(id, &old.Hello, h)
	}
	r.servers[id] = serverState{Hello: h, seen: now, word: h}
	// What a server says it keeps counts up to what twice the servers
	// heard would give: it cannot stretch every server's liveness.
	r.every = max(r.every, r.interval(), min(time.Duration(h.Heartbeat), r.pace.every(2*len(r.servers))))
	return !ok || old.seen.Before(now.Add(-r.lost())) || h.Free > old.Free
}

// again records that server id said its last heartbeat heard in full
// again at at, and reports whether it was known, and whether it has more
// room than it had: back after silence, or more GPUs free. What it says
// again is its word as much as it was the first time, and stands over
// the room reckoned since, as a heartbeat heard in full does: kept at
// the reckoning, room that a contract's end gave back before a heartbeat
// that still counted it (its final reading counted first) stayed lost
// for as long as the server said the same, and clients were refused
// while GPUs stood free.
func (r *registry) again(id string, at time.Time) (known, roomGrew bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok := r.servers[id]
	if !ok {
		return false, false
	}
	now := r.now()
	s := old
	s.Hello, s.At, s.seen = s.word, at, now
	r.servers[id] = s
	r.asks.put(id, &old.Hello, s.Hello)
	return true, old.seen.Before(now.Add(-r.lost())) || s.Free > old.Free
}

// timely checks a hello's or heartbeat's time against the registry's
// clock: within skew of it, and, for a heartbeat (after), no earlier
// than the last the server was heard at. A copy of a heartbeat, sent
// again by anyone who saw it, so says nothing in its server's name once
// skew has passed, or once the server has spoken since (a copy of its
// latest word, sent within skew, says what it said); a server whose
// clock is off by more than skew is told so.
func (r *registry) timely(server string, at time.Time, skew time.Duration, after bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	if at.Before(now.Add(-skew)) || at.After(now.Add(skew)) {
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is %v off the exchange's clock (%s), more than the %v allowed: keep the server's clock in time (NTP)",
			at.UTC().Format(time.RFC3339Nano), at.Sub(now).Round(time.Millisecond), now.UTC().Format(time.RFC3339Nano), skew)}
	}
	if s, ok := r.servers[server]; after && ok && at.Before(s.At) {
		return &bourse.Error{Code: bourse.EInvalid, Field: "at", Message: fmt.Sprintf(
			"%s is before the last heartbeat heard from %s (%s): a copy", at.UTC().Format(time.RFC3339Nano), server, s.At.UTC().Format(time.RFC3339Nano))}
	}
	return nil
}

// rooms returns the live servers of ids as they last said, by id.
func (r *registry) rooms(ids []string) map[string]serverState {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff()
	out := make(map[string]serverState, len(ids))
	for _, id := range ids {
		if s, ok := r.servers[id]; ok && s.live(cutoff) {
			out[id] = s
		}
	}
	return out
}

// lists says how server's last heartbeat, heard no earlier than since,
// listed contract id: "heartbeat" as running (the server is alive and
// runs it: its readings are late on their way, not lost), "settling" as
// ended with a final reading the server holds and has no receipt for
// (it is on its way), "" not at all.
func (r *registry) lists(server, id string, since time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[server]
	switch {
	case !ok || !s.live(since):
		return ""
	case slices.Contains(s.Running, id):
		return "heartbeat"
	case slices.Contains(s.Settling, id):
		return "settling"
	}
	return ""
}

// heard is what the servers heard since since said they run or hold the
// final readings of: each server's running and settling contracts, by
// server (Hearing.Servers).
func (r *registry) heard(since time.Time) map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]string{}
	for id, s := range r.servers {
		if !s.live(since) {
			continue
		}
		out[id] = append(slices.Clip(s.Running), s.Settling...)
	}
	return out
}

// setRecords makes by the servers' records.
func (r *registry) setRecords(by map[string]*protocol.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = by
}

// record is server's record, nil where none is kept; a copy. r.mu is
// held.
func (r *registry) record(server string) *protocol.Record {
	if rec := r.records[server]; rec != nil {
		c := *rec
		return &c
	}
	return nil
}

// isDemoted is demoted, for callers that do not hold r.mu.
func (r *registry) isDemoted(server string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.demoted(server)
}

// demoted says whether server's record demotes it. r.mu is held.
func (r *registry) demoted(server string) bool {
	rec := r.records[server]
	return rec != nil && rec.Demoted
}

// liveIDs lists the servers heard from recently.
func (r *registry) liveIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff()
	var out []string
	for _, id := range r.order { // in order: the simulator must be deterministic
		if r.servers[id].live(cutoff) {
			out = append(out, id)
		}
	}
	return out
}

// live counts the servers heard from recently.
func (r *registry) live() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff()
	n := 0
	for _, s := range r.servers {
		if s.live(cutoff) {
			n++
		}
	}
	return n
}
