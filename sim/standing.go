package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Standing offers (Config.Standing): a job whose negotiation ends without
// a contract is not put in the client's queue to offer again when some
// server frees up; its strategy's last terms are offered once more with a
// wait (up to the job's patience), and a job the House queues waits in
// the House's book, matched by the House's own rules when a contract's
// end or a heartbeat frees GPUs (House.Match, after each). A job the book
// gives up on (its wait ended, its wallet cannot pay) is rejected; one
// the House will not queue waits in the client's queue as before.

// stand offers j's last terms to wait in the book, and reports whether it
// now waits there or has its contract.
func (m *Simulation) stand(j *job) bool {
	now := m.e.Now()
	wait := min(j.giveUp.Sub(now), protocol.MaxWait).Truncate(time.Second)
	if j.last.GPUs == 0 || wait <= 0 {
		return false
	}
	req := protocol.OfferRequest{RequestID: fmt.Sprintf("%s-%d-wait", j.w.ID, j.tries), Terms: j.last, Wait: contract.Duration(wait)}
	m.offerer = j
	m.offers++
	reply, err := m.house.Offer(context.Background(), j.w.Client, req)
	m.offerer = nil
	switch {
	case err != nil:
		return false
	case reply.Contract != nil:
		return true // Notify has it
	case reply.Queued != nil:
		m.standing[reply.Queued.ID] = j
		return true
	}
	return false
}

// matchBook has the House offer its book to the servers that freed GPUs.
func (m *Simulation) matchBook() {
	if m.cfg.Standing && len(m.standing) > 0 {
		m.house.Match(context.Background())
	}
}

// fromBook is the job of a waiting offer the House matched (its accepted
// event) or took out of the book, if it is one of this market's.
func (m *Simulation) fromBook(id string) *job {
	j := m.standing[id]
	delete(m.standing, id)
	return j
}
