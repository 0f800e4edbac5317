package exchange

import (
	"github.com/bourse/bourse/protocol"
)

// Servers lists the live servers of currency cur (every currency's if
// empty), by id, as each last said of itself: its GPUs and how many are
// free, what it runs, its policy. Any client may ask: it is what servers
// tell every instance of the exchange, and names no client.
func (h *House) Servers(cur string) []protocol.Server {
	return h.servers.list(cur)
}

// list is the live servers of cur (every currency's if empty), by id.
func (r *registry) list(cur string) []protocol.Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff() // live as routing counts it, through this instance's own outage
	out := []protocol.Server{}
	for _, id := range r.order {
		s := r.servers[id]
		if !s.live(cutoff) || (cur != "" && s.Currency != cur) {
			continue
		}
		srv := protocol.ServerOf(id, s.Hello, s.seen.UTC())
		srv.Record = r.record(id)
		out = append(out, srv)
	}
	return out
}
