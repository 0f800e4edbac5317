package server

import (
	"time"

	"github.com/bourse/bourse/trade"
)

// clientMemory is how long the agent remembers a client with nothing
// running: longer than any sensible fair-use cooldown. The memory does not
// survive a restart of the agent.
const clientMemory = 32 * 24 * time.Hour

// clientBook remembers when each client's contracts last started and ended,
// for State.Client. Guarded by the agent's mu.
type clientBook struct {
	last   map[string]*ClientUse // Running unused
	pruned time.Time
}

func (b *clientBook) get(client string) *ClientUse {
	if b.last == nil {
		b.last = map[string]*ClientUse{}
	}
	u, ok := b.last[client]
	if !ok {
		u = new(ClientUse)
		b.last[client] = u
	}
	return u
}

// started records a contract's start.
func (b *clientBook) started(client string, at time.Time) {
	u := b.get(client)
	u.LastStart = later(u.LastStart, at)
}

// ended records a contract's end; preemption was not the client's doing,
// and does not count.
func (b *clientBook) ended(client string, at time.Time, reason trade.Reason) {
	if reason == trade.ReasonPreempted {
		return
	}
	u := b.get(client)
	u.LastEnd = later(u.LastEnd, at)
}

// prune forgets the clients not seen for clientMemory, at most hourly.
func (b *clientBook) prune(now time.Time) {
	if now.Sub(b.pruned) < time.Hour {
		return
	}
	b.pruned = now
	for c, u := range b.last {
		if now.Sub(later(u.LastStart, u.LastEnd)) > clientMemory {
			delete(b.last, c)
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// clientUse is what State.Client says of client. a.mu is held.
func (a *Agent) clientUse(client string) ClientUse {
	var u ClientUse
	if l, ok := a.clients.last[client]; ok {
		u = *l
	}
	u.Running = 0
	for _, r := range a.active {
		if r.terms.Client == client && r.claimed == "" {
			u.Running++
		}
	}
	for _, h := range a.holds {
		if h.terms.Client == client {
			u.Running++
		}
	}
	for _, b := range a.bookings {
		if b.terms.Client == client && !b.starting {
			u.Booked++
		}
	}
	return u
}
