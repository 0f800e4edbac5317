package server

import (
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// Quote answers a quote: what Decide would answer the offer now, claiming
// no GPU and booking no slot, so that a client may learn prices without
// binding anyone. An accept says that the policy takes the terms and the
// GPUs are there at this moment (its ClaimFor is zero: nothing is claimed).
// A rejection's counter-offers are remembered as Decide's are, so that
// the client may take one while it is valid; a counter-offer the node
// made is quoted as Decide would honour it.
func (n *Node) Quote(now time.Time, so protocol.ServerOffer) protocol.Decision {
	if d, refused := n.refuse(so); refused {
		return d
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sweep(now)
	if n.closing {
		return protocol.Decision{Reason: "the server is shutting down", Code: bourse.EUnavailable}
	}
	t := so.Terms
	c, honoured := n.counters[so.Counter]
	honoured = honoured && so.Counter != "" && c.terms.Equal(t)
	d := Decision{Accept: honoured}
	if !honoured {
		d = n.policy.Decide(t, n.view(now, t.Client))
	}
	switch {
	case !d.Accept:
		return n.reject(d, now)
	case t.StartAt.After(now) && !d.Book && !honoured:
		return protocol.Decision{Reason: "this server takes no bookings: leave start_at out"}
	case t.StartAt.After(now):
		if n.slot(t, now) == nil {
			return protocol.Decision{Reason: "not enough GPUs of the class free for the slot"}
		}
		return protocol.Decision{Accept: true}
	}
	victims, ok := n.victims(d.Preempt)
	if !ok || n.pickFor(t, now, victims...) == nil {
		return protocol.Decision{Reason: "not enough free GPUs of the class"}
	}
	return protocol.Decision{Accept: true}
}
