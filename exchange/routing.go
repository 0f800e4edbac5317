package exchange

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// The routing decision: where an offer or a quote goes, or why nowhere,
// as one value. The rules it applies are route's (route.go) and the
// asks' and runs' own (contract); the refusals are built here, once.

// routing is routing's one answer to an offer or a quote: the servers to
// ask, in order, and what the asks answer beside them; or why no server
// may take the terms. House.fresh acts on it, and House.Quote (which,
// for terms naming their server, then reads that server's ask: named);
// where an offer goes is decided here and in what routing calls.
type routing struct {
	route
	// refusal says why no server may take the terms, built once here:
	// no live server fits them (noMatch: no_match, job_unsupported or
	// permission_denied), or the counter-offer from an ask that the offer
	// takes has lost its GPUs (capacity_gone). Nothing is asked then.
	refusal error
	// mayWait says that the refusal is only that no server fits now: an
	// offer that may wait waits in the book for one that will.
	mayWait bool
}

// routing decides where terms t go: an offer's, which takes
// counter-offer counter where it names one, or a quote's (counter
// empty); id is the contract's or the quote's, which spreads ties
// (rotation); k is Config.RouteTo. Terms naming their server go to it
// as it stands.
func (r *registry) routing(t contract.Terms, id string, k int, counter string) routing {
	var out routing
	if strings.HasPrefix(counter, askCounterPrefix) && r.askCounterGone(t.Server, t) {
		out.refusal = counterGone()
		return out
	}
	// Routed by the id, which an offer's request names: the same in
	// every run of a simulation, and different for every offer.
	out.route = r.route(t, id, k)
	if !out.fits {
		out.refusal, out.mayWait = r.noMatch(t), true
	}
	return out
}

// counterGone is the refusal of a counter-offer taken whose GPUs were
// taken meanwhile, as its server or its ask says.
func counterGone() error {
	return &bourse.Error{Code: bourse.ECapacityGone, Field: "counter", Message: "the counter-offer's GPUs were taken meanwhile"}
}

// askCounterGone says whether a counter-offer built from server's ask
// (askCounters) and taken with terms t has lost its GPUs: the server's
// ask, as it last said it or as took left it, has no room for t now. Its
// server is then not asked: the offer is capacity_gone, as a server says
// of its own counter-offers' GPUs taken meanwhile.
func (r *registry) askCounterGone(server string, t contract.Terms) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.servers[server]
	if !ok || s.Ask == nil || t.StartAt.After(r.now()) {
		return false
	}
	a := (*contract.Ask)(s.Ask)
	for _, c := range a.Classes {
		if c.Fits(t.Class) && a.Room(c, t) >= t.GPUs {
			return false
		}
	}
	return true
}

// noMatch is the answer to terms that no live server can hold, to an
// offer and to a quote alike: that no server has said hello yet, or the
// refusal of the servers that have the GPUs but do not run its job (a
// program on synthetic servers, a program not on a server's list), else
// no_match.
func (r *registry) noMatch(t contract.Terms) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := r.cutoff()
	heard := false
	for _, s := range r.servers {
		if heard = s.live(cutoff); heard {
			break
		}
	}
	if !heard {
		return &bourse.Error{Code: bourse.ENoMatch,
			Message: "no server has registered with this exchange yet (servers speak every second once they run); try again shortly, an offer under a new request id"}
	}
	if s, ok := r.servers[t.Server]; t.Server != "" && (!ok || !s.live(cutoff) || s.Currency != t.Currency) {
		// An offer to one server by name (bourse bid offer --take
		// SERVER): say that the name is unknown here, not that no
		// server has the GPUs, which sends the client to look at them.
		return &bourse.Error{Code: bourse.ENoMatch, Field: "terms.server",
			Message: fmt.Sprintf("no live server named %q sells for %s (bourse bid servers lists them)", t.Server, t.Currency)}
	}
	var why []string
	var code bourse.Code
	field := "terms.job.command"
	for _, id := range r.order {
		s := r.servers[id]
		if !s.live(cutoff) || s.Currency != t.Currency || (t.Server != "" && id != t.Server) || !t.FitIn(s.GPUs) {
			continue
		}
		err := runsOf(s.Hello).Refuses(t.Job)
		if err == nil {
			continue
		}
		if len(why) < 3 { // enough to say why; the rest say the same
			why = append(why, id+": "+bourse.ErrorMessage(err))
		}
		var e *bourse.Error
		if len(why) == 1 && errors.As(err, &e) && e.Field != "" { // job.image for an image's
			field = "terms." + e.Field
		}
		// One code where they agree (permission_denied: none lists the
		// program), else job_unsupported.
		if c := bourse.ErrorCode(err); code == "" {
			code = c
		} else if code != c {
			code = bourse.EJobUnsupported
		}
	}
	if len(why) > 0 {
		return &bourse.Error{Code: code, Field: field,
			Message: fmt.Sprintf("no live server with %d %s for %s runs this job: %s", t.GPUs, describeClass(t.Class), t.Currency, strings.Join(why, "; "))}
	}
	return &bourse.Error{Code: bourse.ENoMatch, Field: "terms.gpus",
		Message: fmt.Sprintf("no live server has %d %s for %s", t.GPUs, describeClass(t.Class), t.Currency)}
}

// describeClass names a class of GPUs in words, for a refusal.
func describeClass(c contract.Class) string {
	s := "GPUs"
	if c.Model != "" {
		s = c.Model + " GPUs"
	}
	if c.MinMemoryMiB > 0 {
		s += fmt.Sprintf(" with at least %d MiB", c.MinMemoryMiB)
	}
	return s
}
