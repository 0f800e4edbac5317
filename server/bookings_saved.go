package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// SavedBooking is a booking the exchange has confirmed (its contract is
// escrowed) and whose slot has not begun: what a driver keeps on disk so
// that a restart of the server does not lose it, and the exchange need
// not void it with a full refund.
type SavedBooking struct {
	Offer    string         `json:"offer"`
	Contract string         `json:"contract"`
	Resumes  string         `json:"resumes,omitempty"`
	Terms    contract.Terms `json:"terms"`
	GPUs     []int          `json:"gpus"`
}

// LateBooking is how long after its start a restored booking is still
// started. The exchange voids a booking that has not started within its
// start timeout (15 s by default); a job started after that would run on
// GPUs nobody pays for.
const LateBooking = 10 * time.Second

// Bookings returns the confirmed bookings not started, by offer, and a
// generation that changes whenever they do: a driver saves them when it
// sees a new one.
func (n *Node) Bookings() ([]SavedBooking, uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := []SavedBooking{} // [] on disk, not null
	for _, id := range slices.Sorted(maps.Keys(n.bookings)) {
		b := n.bookings[id]
		if b.contract == "" || b.starting {
			continue
		}
		out = append(out, SavedBooking{Offer: b.offer, Contract: b.contract, Resumes: b.resumes, Terms: b.terms, GPUs: slices.Clone(b.gpus)})
	}
	return out, n.bookGen
}

// BookingsGen is the generation Bookings would return, without the copy:
// a driver asks it every tick.
func (n *Node) BookingsGen() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.bookGen
}

// Restore takes back bookings a previous run of the server saved, before
// the node decides any offer. A booking that no longer fits (its terms
// are invalid here, its GPUs are gone or taken by another restored one)
// or whose slot began more than LateBooking ago is dropped, and said so
// in the error, which joins one line per booking dropped; the rest are
// kept, and start at their slot as if the server had never stopped.
func (n *Node) Restore(now time.Time, saved []SavedBooking) error {
	const op = "server.Restore"
	n.mu.Lock()
	defer n.mu.Unlock()
	have := map[int]bool{}
	for _, g := range n.cfg.GPUs {
		have[g.Index] = true
	}
	var dropped []string
	taken := map[int]string{}
	for _, s := range saved {
		why := ""
		switch {
		case protocol.CheckID(s.Contract) != nil || s.Offer == "":
			why = "no contract or offer id"
		case contract.Validate(s.Terms, n.scaleOf) != nil:
			why = fmt.Sprintf("its terms are not valid here: %v", contract.Validate(s.Terms, n.scaleOf))
		case len(s.GPUs) != s.Terms.GPUs:
			why = fmt.Sprintf("%d GPUs kept for %d", len(s.GPUs), s.Terms.GPUs)
		case now.Sub(s.Terms.StartAt) > LateBooking:
			why = fmt.Sprintf("its slot began at %s, too long ago: the exchange has voided it", s.Terms.StartAt.UTC().Format(time.RFC3339))
		}
		for _, i := range s.GPUs {
			if why != "" {
				break
			}
			if !have[i] {
				why = fmt.Sprintf("GPU %d is not this server's", i)
			} else if other, ok := taken[i]; ok {
				why = fmt.Sprintf("GPU %d is kept for %s too", i, other)
			}
		}
		if why != "" {
			dropped = append(dropped, fmt.Sprintf("booking %s dropped: %s", s.Contract, why))
			continue
		}
		for _, i := range s.GPUs {
			taken[i] = s.Contract
		}
		n.bookings[s.Offer] = &booking{offer: s.Offer, terms: s.Terms, gpus: slices.Clone(s.GPUs), contract: s.Contract, resumes: s.Resumes}
		n.log.Info("booking restored", "contract", s.Contract, "client", s.Terms.Client, "gpus", s.GPUs, "start", s.Terms.StartAt)
	}
	n.bookGen++
	if len(dropped) > 0 {
		return bourse.Errorf(bourse.EInvalid, op, "%s", strings.Join(dropped, "\n"))
	}
	return nil
}
