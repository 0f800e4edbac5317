package exchange

import (
	"time"
)

// Servers' heartbeats are paced by the fleet: every instance hears every
// heartbeat, so a thousand servers beating once a second cost each
// instance a thousand messages a second whatever the market does. With
// Config.HeartbeatsPerSecond set, the interval a hello reply gives is
// Heartbeat, or the whole multiple of it that keeps the servers' steady
// heartbeats within that many a second:
//
//	interval(n) = Heartbeat · ⌈n / (HeartbeatsPerSecond · Heartbeat)⌉, at least Heartbeat
//
// n being the servers this instance has heard since it started (1,000
// servers at 100 a second: 10 s; 10,000: 100 s). A server that says in
// its heartbeats an interval shorter than that (it said hello when the
// fleet was smaller) is told the new one (House.Pace). What depends on
// the interval grows with it: a server is lost to routing after three of
// its intervals, or ServerLostAfter if longer (lost); the sweep takes a
// heartbeat as word that a contract runs for ServerLostAfter and however
// much longer than Heartbeat the interval has grown (heardWithin). A
// change of a server's ask is still said within a tenth of Heartbeat
// (HelloReply.ChangeGap): heartbeats beyond the steady ones follow the
// market's changes, not its size.

// lostBeats is how many of its heartbeat intervals a server may be
// silent for before routing leaves it, where that is longer than
// ServerLostAfter.
const lostBeats = 3

// pace is what a registry needs of Config to pace heartbeats.
type pace struct {
	lostAfter time.Duration // ServerLostAfter
	base      time.Duration // Heartbeat
	perSecond int           // HeartbeatsPerSecond; 0 keeps base
}

func pacing(c Config) pace {
	return pace{lostAfter: c.ServerLostAfter, base: c.Heartbeat, perSecond: c.HeartbeatsPerSecond}
}

// every is the heartbeat interval for n servers.
func (p pace) every(n int) time.Duration {
	if p.perSecond <= 0 || n <= 0 {
		return p.base
	}
	need := time.Duration(n) * time.Second / time.Duration(p.perSecond)
	return max(1, (need+p.base-1)/p.base) * p.base
}

// interval is the heartbeat interval a server is told now. r.mu is held.
func (r *registry) interval() time.Duration {
	return r.pace.every(len(r.servers))
}

// lost is how long a server may be silent and still be routed to:
// ServerLostAfter, or three of the longest heartbeat interval a server
// may keep. r.mu is held.
func (r *registry) lost() time.Duration {
	return max(r.pace.lostAfter, lostBeats*r.every)
}

// heardWithin is how far back a heartbeat that lists a contract says
// that its server runs it, for the sweep: ServerLostAfter, and however
// much longer than Heartbeat the intervals have grown.
func (r *registry) heardWithin() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pace.lostAfter + r.every - r.pace.base
}

// helloEvery is the interval a hello reply gives now, counting the
// server saying hello.
func (r *registry) helloEvery(server string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(r.servers)
	if _, ok := r.servers[server]; !ok {
		n++
	}
	every := r.pace.every(n)
	r.told[server] = every
	return every
}

// retell says the interval server is to be told, or 0: where its
// heartbeat says it keeps an interval (says) shorter than the pace's
// now, and it has not been told this one already.
func (r *registry) retell(server string, says time.Duration) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	every := r.interval()
	if says <= 0 || says >= every || r.told[server] >= every {
		return 0
	}
	r.told[server] = every
	return every
}

// HeartbeatEvery is the heartbeat interval a hello reply gives now.
func (h *House) HeartbeatEvery() time.Duration {
	h.servers.mu.Lock()
	defer h.servers.mu.Unlock()
	return h.servers.interval()
}

// Pace says what heartbeat interval to tell server, whose heartbeat says
// it keeps every (Hello.Heartbeat), or 0 for nothing to tell: the fleet
// grew since it said hello. A server that does not say (one older than
// the field) is told nothing: it would not hear.
func (h *House) Pace(server string, every time.Duration) time.Duration {
	return h.servers.retell(server, every)
}

// changeGap is how many heartbeats changes of its ask may bring about
// per Heartbeat, at most: HelloReply.ChangeGap is a tenth of it, as
// servers older than the field wait.
const changeGap = 10
