package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim/workload"
)

// client is a bidding client: its spec and its own random stream.
type client struct {
	spec scenario.ClientSpec
	rng  *rand.Rand
}

// job is a workload job on its way through the market: negotiating,
// waiting for capacity, or running under a contract, perhaps several in
// turn (a preempted job waits and runs again for what it has left).
type job struct {
	w         workload.Job
	c         *client
	arrived   time.Time
	giveUp    time.Time     // leaves the queue after this
	remaining time.Duration // of its run, at full speed
	firstRun  time.Time     // when it first started
	neg       *strategy.Negotiator
	contract  string // the contract it holds, if any
	tries     int
	last      contract.Terms // the terms it last offered
}

// rounds is how many offers a job's first negotiation makes before it
// waits in the queue; woken from the queue, it makes one: it was woken
// because something changed, and a second round 10s later would find the
// same market.
const rounds = 2

// arrive submits the job read ahead and reads the next.
func (m *Simulation) arrive() {
	w := *m.next
	m.next = nil
	if k := m.cfg.TrackEvery; k > 0 && m.arrived%k == 0 && m.arrived > 0 {
		m.m.Mark(m.arrived, m.offers)
	}
	m.arrived++
	if m.cfg.Progress != nil && m.arrived%ProgressEvery == 0 {
		m.cfg.Progress(m.arrived)
	}
	defer m.pull()
	c, err := m.client(w.Client)
	if err != nil {
		m.srcErr = err
		m.e.Halt()
		return
	}
	m.m.Arrive(w.Client)
	now := m.e.Now()
	j := &job{w: w, c: c, arrived: now, remaining: w.Duration}
	patience := c.spec.Patience
	if patience <= 0 {
		patience = 24 * time.Hour
	}
	j.giveUp = now.Add(patience)
	if w.Deadline > 0 {
		j.giveUp = now.Add(w.Deadline - w.Duration) // it cannot finish in time after that
	}
	m.live[j] = struct{}{}
	m.negotiate(j)
}

// negotiate starts a negotiation for what is left of the job.
func (m *Simulation) negotiate(j *job) {
	j.tries++
	util := decimal.NewFromFloat(j.w.Utilization).Round(3)
	if util.Sign() <= 0 {
		util = decimal.NewFromInt(1)
	}
	// The runtime is what is left, to the nanosecond: the synthetic runner
	// runs a job for exactly its runtime and the contract then ends
	// completed. Rounded to the second, a job preempted between whole
	// seconds (its start had followed a prepayment that ran out
	// mid-second, say) and resumed with 34.4 s left ran 34 s and was
	// counted completed with 0.4 s of its work never run: a contract that
	// matched no job of the workload (issue 45).
	sj := strategy.Job{
		Name: fmt.Sprintf("%s-%d", j.w.ID, j.tries), Currency: string(scenario.Currency.Code), Scale: scenario.Currency.Scale,
		GPUs: j.w.GPUs, Class: contract.Class{Model: j.w.Model}, Runtime: j.remaining,
		Utilization: util, Value: j.c.spec.Value, Preemptible: j.w.Preemptible,
	}
	if j.w.Deadline > 0 {
		sj.Deadline = j.arrived.Add(j.w.Deadline)
	}
	r := rounds
	if j.tries > 1 {
		r = 1
	}
	j.neg = strategy.NewNegotiator(strategy.Negotiation{Strategy: j.c.spec.Strategy, Job: sj, Rounds: r,
		Pause: 10 * time.Second})
	m.busy++
	m.step(j)
}

// step carries the negotiation on until it must wait or is over. Offers
// are answered at once: the House runs in this goroutine.
func (m *Simulation) step(j *job) {
	ctx := context.Background()
	for {
		a := j.neg.Next(m.e.Now())
		switch a.Op {
		case strategy.Offer, strategy.Take:
			req := protocol.OfferRequest{RequestID: a.RequestID, Terms: a.Terms}
			if a.Op == strategy.Offer {
				j.last = a.Terms
			}
			if a.Op == strategy.Take {
				req.Terms, req.Counter = a.Counter.Terms, a.Counter.ID
				req.Terms.Server = a.Counter.Server
			}
			m.offerer = j
			m.offers++
			reply, err := m.house.Offer(ctx, j.w.Client, req)
			m.offerer = nil
			j.neg.Answer(m.e.Now(), reply, err)
		case strategy.Wait:
			m.e.After(a.Wait, func() { m.step(j) })
			return
		case strategy.Done:
			m.busy--
			return
		default: // strategy.Failed
			m.busy--
			m.failed(j, a.Err)
			return
		}
	}
}

// failed decides what becomes of a job whose negotiation got no contract:
// one the market could take later waits for capacity; one it never can
// (no server of its kind, terms refused) is rejected.
func (m *Simulation) failed(j *job, err error) {
	code := bourse.ErrorCode(err)
	later := errors.Is(err, strategy.ErrGaveUp) || code == bourse.EInsufficientFunds || code == bourse.ECapacityGone
	if !later {
		if code == bourse.ENoMatch {
			m.m.NoMatch()
			if m.noMatch == nil {
				m.noMatch = err
			}
		}
		m.reject(j)
		return
	}
	if m.cfg.Standing && m.e.Now().Before(j.giveUp) && m.stand(j) {
		return
	}
	m.requeue(j)
}

// requeue puts a job in the queue for capacity, unless it is past its
// patience.
func (m *Simulation) requeue(j *job) {
	if !m.e.Now().Before(j.giveUp) {
		m.reject(j)
		return
	}
	m.waiting.push(j)
}

func (m *Simulation) reject(j *job) {
	delete(m.live, j)
	m.lastEnd = m.e.Now()
	m.m.Reject(j.w.Deadline > 0)
}

// wakeScan is how far down the queue wake looks for jobs that fit: far
// enough that a big job at the head does not idle GPUs a small one could
// use, near enough that a long queue costs little per contract's end.
const wakeScan = 64

// wake lets up to n waiting jobs that some server has room for try again,
// oldest first; jobs past their patience leave the queue. The others keep
// their place.
func (m *Simulation) wake(n int) {
	now := m.e.Now()
	var retry []*job
	m.waiting.scan(wakeScan, func(j *job) bool {
		switch {
		case !now.Before(j.giveUp):
			m.reject(j)
			return false
		case len(retry) < n && m.free.fits(&j.w):
			retry = append(retry, j)
			return false
		}
		return true
	})
	for _, j := range retry {
		m.negotiate(j)
	}
}
