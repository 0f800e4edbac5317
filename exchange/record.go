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

// recordEvery is how often the sweep reads the records again.
const recordEvery = 30 * time.Second

// records reads the servers' records from the contracts accepted in the
// last RecordWindow, every recordEvery, where Config.KeepRecords asks.
func (h *House) records(ctx context.Context, now time.Time) {
	if !h.cfg.KeepRecords || now.Sub(h.recorded) < recordEvery {
		return
	}
	counted, err := h.store.Records(ctx, now.Add(-h.cfg.RecordWindow))
	if err != nil {
		h.log.Warn("sweep: read the servers' records", "err", err)
		return
	}
	by := make(map[string]*protocol.Record, len(counted))
	for server, r := range counted {
		r.Window = contract.Duration(h.cfg.RecordWindow)
		by[server] = &r
	}
	for _, r := range by {
		r.Demoted = r.Demotes()
	}
	h.servers.setRecords(by)
	h.recorded = now
}
