package exchange

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/pricing"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// Matching: when GPUs free up (a contract ends, a heartbeat shows more
// free, a server registers or comes back) the server is marked as having
// room; Match, which its driver calls often (over NATS, on the one
// instance that leads), offers the waiting offers of each such server's
// currency to the servers with room that fit them, the book's order
// first: the highest price at full use, then the earliest. An offer
// that no server with room fits is passed over for those after it (a
// large offer does not hold up small ones), and a pass stops when the
// servers' room is used. Each offer is negotiated under its request id's
// claim, as a retry of its request would be, so that two instances, or
// an instance and the client's retry, never make two answers; the first
// accept makes its contract as an offer's does (open), the store taking
// the offer out of the book in the escrow's transaction. Counter-offers
// reach the client as countered events; the offer waits on.

// rooms are the servers that may have room since the last Match.
type rooms struct {
	mu      sync.Mutex
	pending map[string]bool
	all     time.Time // when every live server was last matched
}

func (r *rooms) mark(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[string]bool{}
	}
	r.pending[server] = true
}

// take returns the servers marked, and every live one of live where
// every has passed since they were last all taken.
func (r *rooms) take(now time.Time, every time.Duration, live func() []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Collect(maps.Keys(r.pending))
	r.pending = nil
	if now.Sub(r.all) >= every {
		r.all = now
		out = append(out, live()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Match offers the waiting offers to the servers that have room since the
// last call, and returns how many contracts it made.
func (h *House) Match(ctx context.Context) int {
	now := h.cfg.Now()
	ids := h.room.take(now, h.cfg.RematchEvery, h.servers.liveIDs)
	if len(ids) == 0 {
		return 0
	}
	byCurrency := map[string]map[string]serverState{}
	for id, s := range h.servers.rooms(ids) {
		if s.Free == 0 {
			continue
		}
		if byCurrency[s.Currency] == nil {
			byCurrency[s.Currency] = map[string]serverState{}
		}
		byCurrency[s.Currency][id] = s
	}
	made := 0
	for _, cur := range slices.Sorted(maps.Keys(byCurrency)) {
		made += h.matchCurrency(ctx, cur, byCurrency[cur], now)
	}
	return made
}

// matchCurrency offers cur's book, best first, to servers.
func (h *House) matchCurrency(ctx context.Context, cur string, servers map[string]serverState, now time.Time) int {
	ws, err := h.store.Book(ctx, BookQuery{Currency: cur, Limit: h.cfg.MatchBatch})
	if err != nil {
		h.log.Warn("match: read the book", "currency", cur, "err", err)
		return 0
	}
	room := map[string]int{}
	for id, s := range servers {
		room[id] = s.Free
	}
	made := 0
	for _, w := range ws {
		if !w.Until.After(now) {
			continue // the sweep expires it
		}
		var cands []string
		for _, id := range slices.Sorted(maps.Keys(room)) {
			if room[id] >= w.Terms.GPUs && fits(servers[id], w.Terms) && (w.Terms.Server == "" || w.Terms.Server == id) {
				cands = append(cands, id)
			}
		}
		if len(cands) == 0 {
			continue
		}
		if win := h.matchOne(ctx, w, cands); win != "" {
			made++
			if room[win] -= w.Terms.GPUs; room[win] <= 0 {
				delete(room, win)
			}
			if len(room) == 0 {
				break
			}
		}
	}
	return made
}

// fits says whether server s has GPUs enough of t's class.
func fits(s serverState, t pricing.Terms) bool {
	n := 0
	for _, g := range s.GPUs {
		if t.Class.Fits(g.Model, g.MemoryMiB) {
			n++
		}
	}
	return n >= t.GPUs
}

// matchOne negotiates waiting offer w with servers under its request's
// claim, and returns the server whose accept made its contract, or "".
// An offer its client can no longer pay, that a cap now refuses or whose
// terms no longer hold leaves the book, with an event that says why.
func (h *House) matchOne(ctx context.Context, w trade.Waiting, servers []string) string {
	now := h.cfg.Now()
	cl := Claim{ID: w.ID, Token: newToken(), Until: now.Add(h.cfg.Negotiation + claimMargin)}
	got, err := h.store.Claim(ctx, cl, now)
	if err != nil || !got.Mine {
		return "" // a retry of its request, or another instance, negotiates it
	}
	queued := protocol.OfferReply{Queued: &w}
	finish := func() {
		if err := h.store.Finish(context.WithoutCancel(ctx), cl, encodeOutcome(queued, nil)); err != nil {
			h.log.Warn("match: the claim of a waiting offer not freed; it frees at its deadline", "offer", w.ID, "err", err)
		}
	}
	if _, err := h.store.Contract(ctx, w.ID); err == nil {
		// Another instance matched it after this one read the book: its
		// contract ended the claim this one now holds. Negotiating again
		// would claim a server's GPUs for nothing, and releasing that
		// accept under the same offer id (two instances on one clock)
		// could release the contract's own.
		finish()
		return ""
	}
	t := w.Terms
	err = pricing.Validate(t, h.scaleOf(ctx))
	if err == nil {
		err = h.checkStartAt(t.StartAt)
	}
	var adm caps.Admission
	if err == nil {
		adm, _, err = h.admit(ctx, w.Client, t)
	}
	if err != nil {
		finish()
		h.refused(ctx, w, err)
		return ""
	}
	offerID := w.ID + "-" + fmt.Sprint(now.UnixNano())
	win, signed, reply := h.negotiate(ctx, protocol.ServerOffer{Offer: offerID, Terms: t}, servers)
	if win == "" {
		finish()
		if len(reply.Counters) > 0 {
			h.notify.Notify(w.Client, Event{Type: protocol.EventCountered, Waiting: &w, Counters: reply.Counters, At: h.cfg.Now().UTC()})
		}
		return ""
	}
	_, created, err := h.open(ctx, w.ID, cl.Token, offerID, win, signed, adm, t, protocol.OfferRequest{RequestID: w.RequestID, Resumes: w.Resumes}, w.QueuedAt)
	if err != nil {
		h.router.Cancel(win, offerID)
		finish()
		h.refused(ctx, w, err)
		return ""
	}
	if !created {
		return "" // a retry of its request made the contract first
	}
	h.metrics.book.WithLabelValues("matched").Inc()
	return win
}

// refused takes w out of the book for a refusal that another try cannot
// cure; anything else (the database down, the offer cancelled meanwhile)
// leaves it as it is.
func (h *House) refused(ctx context.Context, w trade.Waiting, err error) {
	why, leaves := leftFor(err)
	if !leaves {
		if bourse.ErrorCode(err) != bourse.EConflict {
			h.log.Warn("match: a waiting offer not matched; it is tried again", "offer", w.ID, "err", err)
		}
		return
	}
	if _, _, lerr := h.leave(ctx, w.ID, why, bourse.ErrorMessage(err)); lerr != nil {
		h.log.Warn("match: a waiting offer refused but not taken out of the book", "offer", w.ID, "err", lerr)
	}
}
