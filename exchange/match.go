package exchange

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Matching: when GPUs free up the server is marked as having room (rooms,
// pass.go); Match, which its driver calls often (over NATS, on the one
// instance that leads), offers the waiting offers of each such server's
// currency to the servers with room that fit them, the book's order
// first: the highest sure price, then the earliest. An offer that no
// server with room fits, or that every one of them has refused and would
// refuse again (refusal.go), is passed over for those after it: what no
// server will take never holds up what one will. A pass is bounded: it
// reads at most MatchScan waiting offers and negotiates at most
// MatchBatch; one that stops there with room left goes on from where it
// stopped at the next pass. Each offer is negotiated under its request
// id's lock, as a retry of its request would be, so that two instances,
// or an instance and the client's retry, never make two answers; the
// first accept makes its contract as an offer's does (open), the store
// taking the offer out of the book in the escrow's transaction.
// Counter-offers reach the client as countered events; the offer waits
// on.

// bookPage is how many waiting offers a pass reads at a time.
const bookPage = 100

// Match offers the waiting offers to the servers that have room since the
// last call, as far as each currency's pass is due, and returns how many
// contracts it made.
func (h *House) Match(ctx context.Context) int {
	now := h.cfg.Now()
	due := h.room.take(now, h.cfg.RematchEvery, h.cfg.MatchGap, h.servers.liveIDs, h.servers.rooms)
	h.refusals.prune(now)
	made := 0
	for _, p := range due {
		h.metrics.matchPasses.Inc()
		made += h.matchCurrency(ctx, p.currency, p.servers, now)
	}
	return made
}

// matchCurrency offers cur's book, best first (or from where its last
// pass stopped), to servers, within the pass's bounds.
func (h *House) matchCurrency(ctx context.Context, cur string, servers map[string]serverState, now time.Time) int {
	room := map[string]int{}
	for id, s := range servers {
		if !h.refusals.quiet(id, now) {
			room[id] = s.Free
		}
	}
	ids := slices.Sorted(maps.Keys(room))
	after := h.room.resumeAt(cur)
	read, asked, made := 0, 0, 0
	for len(room) > 0 {
		limit := min(bookPage, h.cfg.MatchScan-read)
		ws, err := h.store.Book(ctx, BookQuery{Currency: cur, After: after, Limit: limit})
		if err != nil {
			h.log.Warn("match: read the book", "currency", cur, "err", err)
			return made
		}
		for i := range ws {
			w := ws[i]
			read, after = read+1, &ws[i]
			if !w.Until.After(now) {
				continue // the sweep expires it
			}
			cands := h.candidates(w, ids, room, servers, now)
			if len(cands) == 0 {
				h.counterWaiting(ctx, w, ids, room, servers, now)
				continue
			}
			asked++
			h.metrics.matchAsked.Inc()
			began := h.cfg.Now()
			if win := h.matchOne(ctx, w, cands, servers); win != "" {
				made++
				h.servers.took(win, w.Terms, began)
				if room[win] -= w.Terms.GPUs; room[win] <= 0 {
					delete(room, win)
				}
			}
			if len(room) == 0 {
				break
			}
			if asked >= h.cfg.MatchBatch {
				h.room.stopped(cur, after, slices.Collect(maps.Keys(room)))
				return made
			}
		}
		if len(ws) < limit {
			break // the end of the book
		}
		if read >= h.cfg.MatchScan {
			h.room.stopped(cur, after, slices.Collect(maps.Keys(room)))
			return made
		}
	}
	h.room.stopped(cur, nil, nil) // the next pass starts at the top
	return made
}

// candidates are the servers of ids with room for w, of its class, named
// by it if it names one, that run its job (fits, as routing an offer
// asks), whose asks it meets and that have not refused it as they stand
// now: cheapest first, at most Config.RouteTo (route.go); no server whose
// record demotes it (record.go).
func (h *House) candidates(w contract.Waiting, ids []string, room map[string]int, servers map[string]serverState, now time.Time) []string {
	type cand struct {
		id      string
		rank    askRank
		demoted bool // asked only where no other is (record.go)
	}
	var cs []cand
	for _, id := range ids {
		if room[id] >= w.Terms.GPUs && (w.Terms.Server == "" || w.Terms.Server == id) && fits(servers[id], w.Terms) &&
			!h.refusals.refused(w.ID, id, servers[id].Free, now) && !h.refusals.quiet(id, h.cfg.Now()) {
			if rank, ok := askMet(servers[id], w.Terms, now); ok {
				cs = append(cs, cand{id, rank, h.servers.isDemoted(id)})
			}
		}
	}
	// A server whose record demotes it is matched no waiting offer: one
	// that accepts and does not start drained the book into voids.
	cs = slices.DeleteFunc(cs, func(c cand) bool { return c.demoted })
	slices.SortStableFunc(cs, func(a, b cand) int { return a.rank.cmp(b.rank) })
	// Among servers asking alike, a waiting offer starts where its id
	// says (rotation), as routing's scan of a level does: one order and
	// one tie-break for both, and offers matched at one moment spread over
	// the servers that ask alike instead of all going to the first id.
	for i := 0; i < len(cs); {
		j := i + 1
		for j < len(cs) && cs[j].rank.cmp(cs[i].rank) == 0 {
			j++
		}
		if k := rotation(w.ID, j-i); k > 0 {
			tie := cs[i:j]
			copy(tie, append(slices.Clone(tie[k:]), tie[:k]...))
		}
		i = j
	}
	out := make([]string, 0, min(len(cs), h.cfg.RouteTo))
	for _, c := range cs[:min(len(cs), h.cfg.RouteTo)] {
		out = append(out, c.id)
	}
	return out
}

// counterWaiting answers waiting offer w from the asks of the servers of
// ids with room for it whose asks it does not meet, and that have not
// refused it as they stand now: counter-offers built from the cheapest
// of those asks reach its client as a countered event, as a server's own
// would, and those servers count as having refused it (refusal.go), so
// that the next pass does not say it again. No server is asked.
func (h *House) counterWaiting(ctx context.Context, w contract.Waiting, ids []string, room map[string]int, servers map[string]serverState, now time.Time) {
	var from []askedFor
	for _, id := range ids {
		s := servers[id]
		if room[id] <= 0 || (w.Terms.Server != "" && w.Terms.Server != id) || !runsOf(s.Hello).Takes(w.Terms.Job) ||
			h.refusals.refused(w.ID, id, s.Free, now) || s.Ask == nil || w.Terms.StartAt.After(now) {
			continue
		}
		a := (*contract.Ask)(s.Ask)
		for _, c := range a.Classes {
			if c.Priced() && c.Fits(w.Terms.Class) && a.Room(c, w.Terms) > 0 {
				from = append(from, askedFor{server: id, ask: a, class: c})
				break
			}
		}
	}
	if len(from) == 0 {
		return
	}
	slices.SortStableFunc(from, func(a, b askedFor) int { return rankOf(a.class).cmp(rankOf(b.class)) })
	from = from[:min(len(from), h.cfg.RouteTo)]
	scale, _ := h.scaleOf(ctx)(w.Terms.Currency)
	counters, _ := askCounters(w.ID+"-"+fmt.Sprint(now.UnixNano()), w.Terms, from, scale, now)
	until := now.Add(h.cfg.RematchEvery)
	for _, f := range from {
		h.refusals.refuse(w.ID, f.server, servers[f.server].Free, until)
	}
	if len(counters) > 0 {
		h.notify.Notify(w.Client, Event{Type: protocol.EventCountered, Waiting: &w, Counters: counters, At: now.UTC()})
	}
}

// matchOne negotiates waiting offer w with servers under its request's
// lock, and returns the server whose accept made its contract, or "".
// The servers that answer without an accept are remembered as having
// refused it, and those that do not answer as quiet (refusal.go). An
// offer its client can no longer pay, that a cap now refuses or whose
// terms no longer hold leaves the book, with an event that says why.
func (h *House) matchOne(ctx context.Context, w contract.Waiting, servers []string, states map[string]serverState) string {
	now := h.cfg.Now()
	cl := Lock{ID: w.ID, Token: newToken(), Until: now.Add(h.cfg.Negotiation + lockMargin)}
	got, err := h.store.Lock(ctx, cl, now)
	if err != nil || !got.Mine {
		return "" // a retry of its request, or another instance, negotiates it
	}
	queued := protocol.OfferReply{Queued: &w}
	finish := func() {
		if err := h.store.Finish(context.WithoutCancel(ctx), cl, encodeOutcome(queued, nil)); err != nil {
			h.log.Warn("match: the lock of a waiting offer not freed; it frees at its deadline", "offer", w.ID, "err", err)
		}
	}
	if _, err := h.store.Contract(ctx, w.ID); err == nil {
		// Another instance matched it after this one read the book: its
		// contract ended the lock this one now holds. Negotiating again
		// would claim a server's GPUs for nothing, and releasing that
		// accept under the same offer id (two instances on one clock)
		// could release the contract's own.
		finish()
		return ""
	}
	t := w.Terms
	err = h.checkTerms(ctx, t)
	var adm caps.Admission
	if err == nil {
		adm, _, err = h.admit(ctx, w.Client, t, nil)
	}
	if err != nil {
		finish()
		h.refused(ctx, w, err)
		return ""
	}
	offerID := h.offerID()
	win, signed, reply := h.negotiate(ctx, protocol.ServerOffer{Offer: offerID, Terms: t}, servers)
	if win == "" {
		finish()
		h.remember(w, reply, states)
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

// remember records the answers of a negotiation of w that made no
// contract: each server that answered refused it as it stood, each that
// did not answer in time is quiet.
func (h *House) remember(w contract.Waiting, reply protocol.OfferReply, states map[string]serverState) {
	now := h.cfg.Now()
	until := now.Add(h.cfg.RematchEvery)
	for _, r := range reply.Rejections {
		if r.Code == bourse.EDeadlineExceeded {
			h.refusals.silent(r.Server, until)
		}
		h.refusals.refuse(w.ID, r.Server, states[r.Server].Free, until)
	}
	for _, c := range reply.Counters {
		h.refusals.refuse(w.ID, c.Server, states[c.Server].Free, until)
	}
}

// refused takes w out of the book for a refusal that another try cannot
// cure; anything else (the database down, the offer cancelled meanwhile)
// leaves it as it is.
func (h *House) refused(ctx context.Context, w contract.Waiting, err error) {
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
