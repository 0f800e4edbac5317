package sim

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// client is one lane of a bidding client (a client runs Parallel of them):
// one job at a time, negotiated with the client's strategy (the same
// Negotiator the NATS SDK runs), followed to its contract's end, then,
// after a pause to think, the next.
type client struct {
	m    *Market
	spec scenario.ClientSpec
	rng  *rand.Rand
	jobs *int // the client's jobs so far, shared by its lanes
	neg  *strategy.Negotiator
}

// nextJob starts the lane's next negotiation, unless the market has had
// its offers.
func (c *client) nextJob() {
	m := c.m
	if m.offers >= m.cfg.Offers {
		return
	}
	*c.jobs++
	job := c.spec.Job(c.rng, *c.jobs, m.cfg.JobScale)
	c.neg = strategy.NewNegotiator(strategy.Negotiation{Strategy: c.spec.Strategy, Job: job,
		Pause: 150 * time.Millisecond})
	m.busy++
	c.step()
}

// think pauses before the next job, as the demo's bidders do.
func (c *client) think() {
	c.m.e.After(time.Duration(100+c.rng.IntN(300))*time.Millisecond, c.nextJob)
}

// step carries the negotiation on until it must wait or is over. Offers
// are answered at once: the House runs in this goroutine.
func (c *client) step() {
	m := c.m
	ctx := context.Background()
	for {
		a := c.neg.Next(m.e.Now())
		switch a.Op {
		case strategy.Offer, strategy.Take:
			req := protocol.OfferRequest{RequestID: a.RequestID, Terms: a.Terms}
			if a.Op == strategy.Take {
				req.Terms, req.Counter = a.Counter.Terms, a.Counter.ID
				req.Terms.Server = a.Counter.Server
			}
			m.offers++
			m.stats.Offers++
			reply, err := m.house.Offer(ctx, c.spec.ID, req)
			c.neg.Answer(m.e.Now(), reply, err)
		case strategy.Wait:
			m.e.After(a.Wait, c.step)
			return
		case strategy.Done:
			m.busy--
			// It may have ended already, before the negotiation heard of it.
			if got, err := m.store.Contract(ctx, a.Contract.ID); err == nil && !got.HoldsEscrow() {
				c.think()
			} else {
				m.running[a.Contract.ID] = c
			}
			return
		default: // strategy.Failed
			m.busy--
			m.stats.Failed++
			c.think()
			return
		}
	}
}
