package agent

import (
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse/contract"
)

// held keeps the final readings the exchange has given no receipt for,
// the latest of each contract: the money of a contract rests on its final
// reading, and a broker's acknowledgement does not say the exchange has
// it (protocol.VerbReceipts). It keeps too the latest reading of each
// contract that the usage stream would not take, for the exchange
// directly (Agent.direct). Its methods are safe for concurrent use.
type held struct {
	mu sync.Mutex
	by map[string]*heldFinal
}

type heldFinal struct {
	rd contract.Reading
	// published says the usage stream acknowledged it: the agent's
	// resend passes leave it to the receipts.
	published bool
	// ask is when to ask the exchange about it next; tries how often it
	// was asked without an answer that settles it.
	ask   time.Time
	tries int
}

// add keeps rd, a final reading made or found in the outbox at now, to
// be asked about after wait, unless the same or a later reading of its
// contract is kept.
func (h *held) add(rd contract.Reading, now time.Time, wait time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]*heldFinal{}
	}
	if f, ok := h.by[rd.Contract]; ok && f.rd.Seq >= rd.Seq {
		return
	}
	h.by[rd.Contract] = &heldFinal{rd: rd, ask: now.Add(wait)}
}

// published records that the usage stream acknowledged rd.
func (h *held) published(rd contract.Reading) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f, ok := h.by[rd.Contract]; ok && f.rd.Seq == rd.Seq {
		f.published = true
	}
}

// isPublished says whether rd is kept and was acknowledged by the usage
// stream.
func (h *held) isPublished(rd contract.Reading) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.by[rd.Contract]
	return ok && f.rd.Seq == rd.Seq && f.published
}

// anyFinal says whether a final reading of rds is still kept: the
// exchange has given no receipt for it.
func (h *held) anyFinal(rds []contract.Reading) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, rd := range rds {
		if f, ok := h.by[rd.Contract]; rd.Final && ok && f.rd.Seq == rd.Seq {
			return true
		}
	}
	return false
}

// acknowledged lists the readings kept that the usage stream
// acknowledged.
func (h *held) acknowledged() []contract.Reading {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []contract.Reading
	for _, f := range h.by {
		if f.published {
			out = append(out, f.rd)
		}
	}
	return out
}

// done forgets the contract's reading if its sequence number is at most
// seq (a receipt for seq settles every reading up to it), and returns
// it, and whether it did.
func (h *held) done(id string, seq uint64) (contract.Reading, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.by[id]
	if !ok || f.rd.Seq > seq {
		return contract.Reading{}, false
	}
	delete(h.by, id)
	return f.rd, true
}

// again puts off the next question about the contract's reading seq:
// by wait, or, where wait is zero, by a back-off that doubles from first
// with each try, up to maxAsk.
func (h *held) again(id string, seq uint64, now time.Time, wait, first time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.by[id]
	if !ok || f.rd.Seq != seq {
		return
	}
	f.tries++
	if wait <= 0 {
		wait = min(first<<min(f.tries, 10), maxAsk)
	}
	f.ask = now.Add(wait)
}

// maxAsk is the longest the agent waits between two questions about a
// reading.
const maxAsk = 30 * time.Second

// due lists up to n readings whose time to be asked about has come, the
// earliest made first, and puts each one's next question off by wait (a
// question that goes unanswered is asked again then).
func (h *held) due(now time.Time, n int, wait time.Duration) []contract.Reading {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []contract.Reading
	for _, f := range h.by {
		if !f.ask.After(now) {
			out = append(out, f.rd)
		}
	}
	slices.SortFunc(out, func(a, b contract.Reading) int { return a.At.Compare(b.At) })
	if len(out) > n {
		out = out[:n]
	}
	for _, rd := range out {
		h.by[rd.Contract].ask = now.Add(wait)
	}
	return out
}

// ids lists the contracts whose final reading is kept, sorted.
func (h *held) ids() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.by))
	for id, f := range h.by {
		if f.rd.Final {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// finals is how many final readings are kept.
func (h *held) finals() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, f := range h.by {
		if f.rd.Final {
			n++
		}
	}
	return n
}
