package exchange

import (
	"context"
	"fmt"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Quote says what the servers would answer an offer of client's terms
// now, from their asks alone, without making one and without asking any
// server: nothing is escrowed, no GPU is claimed, no request id is
// locked, and no contract or waiting offer comes of it. The reply lists
// the servers an offer would go to whose asks it meets (at most
// Config.RouteTo, cheapest first); beside them, counter-offers built from
// the asks of the cheapest with room that it does not meet (which the
// client may take, while valid, as it would take one from an offer's
// reply), or, where none has room, when GPUs free up; and the servers an
// offer would go to whose asks name no price (Unpriced: only an offer
// learns what they say). Terms are checked as an offer's are; funds and
// caps are not, since nothing is spent.
func (h *House) Quote(ctx context.Context, client string, req protocol.QuoteRequest) (protocol.QuoteReply, error) {
	t, err := h.quoteTerms(ctx, client, req.Terms)
	if err != nil {
		h.metrics.quotes.WithLabelValues("error").Inc()
		return protocol.QuoteReply{}, err
	}
	id := h.quoteID()
	rt := h.servers.routing(t, id, h.cfg.RouteTo, "")
	if rt.refusal != nil {
		h.metrics.quotes.WithLabelValues("no_match").Inc()
		return protocol.QuoteReply{}, rt.refusal
	}
	if t.Server != "" {
		// A named server is routed to as it stands, its ask met or not:
		// the quote reads its ask.
		rt.route = h.servers.named(t)
	}
	var reply protocol.QuoteReply
	for _, s := range rt.ask {
		if h.servers.priced(s) {
			reply.Accepts = append(reply.Accepts, s)
		} else {
			reply.Unpriced = append(reply.Unpriced, s)
		}
	}
	// Beside the servers that would accept, the counter-offers of those
	// with room that would not, as far as the route read them: the market
	// as it stands, for a client choosing.
	r := h.fromAsks(ctx, id, t, rt)
	reply.Counters = append(reply.Counters, r.Counters...)
	reply.Rejections = append(reply.Rejections, r.Rejections...)
	outcome := "rejected"
	switch {
	case len(reply.Accepts) > 0:
		outcome = "accepted"
	case len(reply.Counters) > 0:
		outcome = "countered"
	case len(reply.Unpriced) > 0:
		outcome = "unpriced"
	}
	h.metrics.quotes.WithLabelValues(outcome).Inc()
	return reply, nil
}

// quoteTerms checks a quote's terms as an offer's: the sender is the
// client, and the terms pass checkTerms.
func (h *House) quoteTerms(ctx context.Context, client string, t contract.Terms) (contract.Terms, error) {
	t, err := ownTerms(t, client, "quote")
	if err != nil {
		return t, err
	}
	return t, h.checkTerms(ctx, t)
}

// gather adds a's counter-offers, each naming its server, to counters, and
// its rejection to rejections where it made no counter. A counter-offer
// whose id a client could not name back (CounterID) is not relayed.
func gather(counters []contract.Counter, rejections []protocol.Rejection, a Answer) ([]contract.Counter, []protocol.Rejection) {
	relayed := 0
	for _, c := range a.Decision.Counters {
		if !protocol.CounterID(c.ID) {
			continue
		}
		c.Server = a.Server
		c.Terms.Server = a.Server
		counters = append(counters, c)
		relayed++
	}
	reason := a.Decision.Reason
	if a.Decision.Code != "" {
		reason = string(a.Decision.Code) + ": " + reason
	}
	if relayed < len(a.Decision.Counters) {
		reason += fmt.Sprintf(" (%d counter-offer(s) not relayed: an id must be 1-%d letters, digits, '.', '_' or '-')", len(a.Decision.Counters)-relayed, protocol.MaxCounterID)
	}
	if relayed == 0 {
		rejections = append(rejections, protocol.Rejection{Server: a.Server, Reason: reason, Code: a.Decision.Code})
	}
	return counters, rejections
}
