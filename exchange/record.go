package exchange

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// A server's word is its accept: accepting an offer claims the client's
// money (escrowed) and the offer itself. A server that accepts and never
// starts costs itself nothing and captures offers honest servers would
// have run, and drains the book into voids (the probe of 2026-12-01: 15
// of 20 offers, and two that had waited an hour). So the exchange keeps
// each server's record from its store (records), shows it (bourse bid
// servers, market data), and routes no offer and matches no waiting
// offer to a server whose record demotes it (protocol.Record.Demotes),
// but for an offer that names it. The record rests on what every instance
// shares, the store's contracts, not on what one instance saw; it counts
// contracts never started whatever the cause, which an honest server
// meets only in an outage, well below the bar.
//
// A server's meter is its word too: it says what the client pays for.
// Canary audits (package canary) run jobs of known GPU use on a server as
// an ordinary client and compare what settled with the truth; their
// results, in the store (Store.PutCanary), join the record over
// Config.CanaryWindow. A server that failed a canary there, and has not
// passed two (protocol.CanaryRestore) since its latest failure, is
// demoted as one that breaks its accepts (protocol.Canaries.Demotes):
// passes judged before a failure do not outweigh it, or a server could
// bank honest canaries and then lie. A canary voided, lost or not settled is
// inconclusive and counts against no one: the record's other counts
// already weigh an accept not started or a server lost, and a canary cut
// short by the exchange's own fault says nothing of the meter. Canaries
// name their server, so a demoted server is still audited, and restored
// by canaries it passes.

// recordEvery is how often the sweep reads the records again.
const recordEvery = 30 * time.Second

// DefaultCanaryWindow is how far back a server's record counts its
// canaries by default: a week, room for one a day and a few more.
const DefaultCanaryWindow = 7 * 24 * time.Hour

// records reads the servers' records from the contracts accepted in the
// last RecordWindow and the canaries judged in the last CanaryWindow,
// every recordEvery, where Config.KeepRecords asks.
func (h *House) records(ctx context.Context, now time.Time) {
	if !h.cfg.KeepRecords || now.Sub(h.recorded) < recordEvery {
		return
	}
	counted, err := h.store.Records(ctx, now.Add(-h.cfg.RecordWindow))
	if err != nil {
		h.log.Warn("sweep: read the servers' records", "err", err)
		return
	}
	canaries, err := h.store.Canaries(ctx, now.Add(-h.cfg.CanaryWindow))
	if err != nil {
		h.log.Warn("sweep: read the servers' canaries", "err", err)
		return
	}
	by := make(map[string]*protocol.Record, len(counted))
	for server, r := range counted {
		r.Window = contract.Duration(h.cfg.RecordWindow)
		by[server] = &r
	}
	for server, c := range canaries {
		r := by[server]
		if r == nil {
			r = &protocol.Record{Window: contract.Duration(h.cfg.RecordWindow)}
			by[server] = r
		}
		c.Window = contract.Duration(h.cfg.CanaryWindow)
		r.Canaries = &c
	}
	for _, r := range by {
		r.Demoted = r.Demotes()
	}
	h.servers.setRecords(by)
	h.recorded = now
}
