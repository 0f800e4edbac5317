package exchange

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Answers from the asks: an offer or quote that no server's ask takes,
// and a waiting offer the book has room for but whose asks it does not
// meet, are answered by the asks themselves, asking no server:
// counter-offers built from the asks of the cheapest servers with room
// (contract.Ask.Reserve), or, where none has room, when GPUs of its
// class free up. A counter-offer so built is the server's to decide on
// when a client takes it; its GPUs gone meanwhile, it is capacity_gone
// without asking (routing.go, askCounterGone).

// askCounterPrefix begins the id of every counter-offer built from an
// ask: one its server never made.
const askCounterPrefix = "ask-"

// askCounterTTL is how long a counter-offer built from an ask stands: a
// server's counter-offers stand for DefaultCounterTTL (server package)
// unless its policy says, and an ask is at most a heartbeat old.
const askCounterTTL = 15 * time.Second

// fromAsks is what the asks answer of routing rt of terms t, asking no
// server (key is the offer's or quote's id, which the counters' ids come
// from):
// counter-offers built from the asks of the cheapest servers with room
// that the terms do not meet, beside the answers of the servers asked;
// where none is asked and none has room, when GPUs of its class free up;
// nothing where routing refused the terms. It is built when it is given,
// so that a counter-offer stands for its time from then.
func (h *House) fromAsks(ctx context.Context, key string, t contract.Terms, rt routing) protocol.OfferReply {
	var reply protocol.OfferReply
	switch {
	case rt.refusal != nil:
	case len(rt.counter) > 0:
		scale, _ := h.scaleOf(ctx)(t.Currency)
		reply.Counters, reply.Rejections = askCounters(key, t, rt.counter, scale, h.cfg.Now())
	case len(rt.ask) == 0:
		reply.Rejections = []protocol.Rejection{noRoom(t, rt.soonest)}
	}
	return reply
}

// askCounters builds counter-offers to terms t from the asks of the
// servers in from, as each server's policy would counter them with the
// GPUs its ask has room for: the terms a client may take at once, each
// naming its server. Each counter's id is derived from the offer's, so
// that the same offer at the same moment gets the same ids (the
// simulator's runs repeat), and nothing more: the server, which never
// saw it, decides on its terms when the client takes it.
func askCounters(offerID string, t contract.Terms, from []askedFor, scale int32, now time.Time) ([]contract.Counter, []protocol.Rejection) {
	var counters []contract.Counter
	var rejections []protocol.Rejection
	for _, f := range from {
		k, why := f.ask.CounterFor(f.class, t, scale)
		if k.IsZero() {
			rejections = append(rejections, protocol.Rejection{Server: f.server, Reason: "its ask: " + strings.Join(why, "; ")})
			continue
		}
		k.Server = f.server
		h := sha256.Sum256([]byte(offerID + "\x00" + f.server))
		counters = append(counters, contract.Counter{ID: askCounterPrefix + hex.EncodeToString(h[:12]), Server: f.server, Terms: k,
			ValidUntil: now.Add(askCounterTTL).UTC(), Note: "from its ask: " + strings.Join(why, "; ")})
	}
	return counters, rejections
}

// noRoom is the rejection of an offer that servers fit but none has room
// for now: when GPUs of its class free up soonest, where a server says.
func noRoom(t contract.Terms, soonest time.Time) protocol.Rejection {
	msg := fmt.Sprintf("no live server has %d %s free now", t.GPUs, describeClass(t.Class))
	if !soonest.IsZero() {
		msg += "; the soonest say theirs free up by " + soonest.UTC().Format(time.RFC3339)
	}
	return protocol.Rejection{Reason: msg}
}
