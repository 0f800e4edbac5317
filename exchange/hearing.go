package exchange

import (
	"context"
	"time"
)

// Instances of one exchange hear servers apart: a heartbeat goes over
// NATS to every instance it can reach, and a NATS node cut off from the
// others (a partition) leaves the instances on each side deaf to the
// servers of the other. An instance that does not hear a server would
// take its contracts' silence for its loss, and settle them as lost while
// the server runs them, heard by an instance on its own side that can
// still write to the store (the probe of 2026-12-01: 14 contracts in one
// 20-second cut, settled for nothing, their servers paid nothing for
// what they metered). So each instance records in the store what it
// hears, every quarter of ServerLostAfter (tellHeard), and the sweep does
// not judge a contract whose server another instance heard list it as
// running or settling since its silence began (heardElsewhere).

// tellHeard records what this instance has heard its servers say within
// ServerLostAfter (and as much longer as heartbeats are paced:
// heardWithin), every quarter of ServerLostAfter, where
// Config.ShareHearing asks. A record that fails is tried again at the
// next sweep.
func (h *House) tellHeard(ctx context.Context, now time.Time) {
	if !h.cfg.ShareHearing || now.Sub(h.told) < h.cfg.ServerLostAfter/4 {
		return
	}
	hearing := Hearing{Instance: h.instance(), At: now, Servers: h.servers.heard(now.Add(-h.servers.heardWithin()))}
	if err := h.store.Hear(ctx, hearing); err != nil {
		h.log.Warn("sweep: record what this instance hears for the others", "err", err)
		return
	}
	h.told = now
}

// heardElsewhere reads, once in a sweep and only when asked, what the
// other instances heard since: whether one heard server list contract id
// as running or settling. Where the store cannot say, it says yes for the
// rest of the sweep: silence that cannot be told from a cut is not a
// lost server.
func (h *House) heardElsewhere(ctx context.Context, since time.Time) func(server, id string) bool {
	if !h.cfg.ShareHearing {
		return func(string, string) bool { return false }
	}
	var by map[string]map[string]bool
	failed := false
	return func(server, id string) bool {
		if by == nil && !failed {
			hs, err := h.store.Heard(ctx, since)
			if err != nil {
				h.log.Warn("sweep: cannot read what the other instances hear; no silence is judged in this sweep", "err", err)
				failed = true
			}
			by = map[string]map[string]bool{}
			for _, hr := range hs {
				if hr.Instance == h.instance() {
					continue // its own word: the registry has it first-hand
				}
				for s, ids := range hr.Servers {
					if by[s] == nil {
						by[s] = map[string]bool{}
					}
					for _, c := range ids {
						by[s][c] = true
					}
				}
			}
		}
		return failed || by[server][id]
	}
}
