package server

import (
	"time"

	"github.com/bourse/bourse/contract"
)

// clientMemory is how long the node remembers a client with nothing
// running: longer than any sensible fair-use cooldown. The memory does not
// survive a restart of the node.
const clientMemory = 32 * 24 * time.Hour

// clientBook remembers when each client's contracts last started and ended,
// for View.Client. Guarded by the node's mu.
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
func (b *clientBook) ended(client string, at time.Time, reason contract.Reason) {
	if reason == contract.ReasonPreempted {
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

// clientUse is what View.Client says of client. n.mu is held.
func (n *Node) clientUse(client string) ClientUse {
	var u ClientUse
	if l, ok := n.clients.last[client]; ok {
		u = *l
	}
	u.Running = 0
	for _, r := range n.active {
		if r.terms.Client == client && r.claimed == "" {
			u.Running++
		}
	}
	for _, h := range n.claims {
		if h.terms.Client == client {
			u.Running++
		}
	}
	for _, b := range n.bookings {
		if b.terms.Client == client && !b.starting {
			u.Booked++
		}
	}
	return u
}
