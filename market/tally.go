package market

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

// Tally counts what the bidders saw, for the live view and the summary.
type Tally struct {
	closing atomic.Bool
	started time.Time

	mu        sync.Mutex
	offers    int
	countered int
	rejected  int
	taken     int
	errors    map[bourse.Code]int
	running   map[string]protocol.ContractView
	settled   map[contract.Reason]int
	voided    int
	clients   map[string]*ClientTally
	servers   map[string]*ServerTally
	log       []string // the latest events, newest last
}

// ClientTally is one bidder's record.
type ClientTally struct {
	Offers, Contracts, Done int
	Spent, Refunded         decimal.Decimal
}

// ServerTally is one server's record.
type ServerTally struct {
	Contracts  int
	BusyGPUs   int
	Revenue    decimal.Decimal
	GPUSeconds decimal.Decimal // U settled
	LastPrice  decimal.Decimal // per GPU-second at full use (P and Q), of the latest contract, to 6 places
}

// Utilisation is the share of a server of gpus GPUs that its settled
// contracts used over elapsed: GPU-seconds used over GPU-seconds there
// were, 0 before any time has passed.
func (s ServerTally) Utilisation(elapsed time.Duration, gpus int) decimal.Decimal {
	capacity := decimal.NewFromFloat(elapsed.Seconds()).Mul(decimal.NewFromInt(int64(gpus)))
	if !capacity.IsPositive() {
		return decimal.Zero
	}
	return s.GPUSeconds.Div(capacity)
}

// Traded is client's record as the store has its contracts, for a
// client that trades outside the tally (the demo's keyboard wallets, a
// person's): its contracts, those that ended (settled or voided), and
// what those charged and refunded. Offers are not in the store: 0.
func Traded(ctx context.Context, store exchange.Store, client string) (ClientTally, error) {
	var ct ClientTally
	cs, err := store.Contracts(ctx, client, 0)
	if err != nil {
		return ct, fmt.Errorf("market: %s's contracts: %w", client, err)
	}
	for _, c := range cs {
		ct.Contracts++
		if c.Ended() {
			ct.Done++
			ct.Spent, ct.Refunded = ct.Spent.Add(c.Charge), ct.Refunded.Add(c.Refund)
		}
	}
	return ct, nil
}

func newTally() *Tally {
	return &Tally{started: time.Now(), errors: map[bourse.Code]int{}, running: map[string]protocol.ContractView{},
		settled: map[contract.Reason]int{}, clients: map[string]*ClientTally{}, servers: map[string]*ServerTally{}}
}

func (t *Tally) client(id string) *ClientTally {
	c, ok := t.clients[id]
	if !ok {
		c = &ClientTally{}
		t.clients[id] = c
	}
	return c
}

func (t *Tally) server(id string) *ServerTally {
	s, ok := t.servers[id]
	if !ok {
		s = &ServerTally{}
		t.servers[id] = s
	}
	return s
}

func (t *Tally) note(format string, args ...any) {
	line := time.Now().Format("15:04:05.000") + "  " + fmt.Sprintf(format, args...)
	t.log = append(t.log, line)
	if len(t.log) > 8 {
		t.log = t.log[len(t.log)-8:]
	}
}

// round counts one round of a client's negotiation: the offer, the
// error that ended it if any, the counter-offer taken for a contract, or,
// for a round without a contract, whether it drew counter-offers.
func (t *Tally) round(client string, r strategy.Round) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.offers++
	t.client(client).Offers++
	if r.Err != nil {
		t.errors[bourse.ErrorCode(r.Err)]++
		t.note("%s: %s", client, bourse.ErrorMessage(r.Err))
	}
	switch {
	case r.Reply.Contract != nil && r.Took != nil:
		t.taken++
		t.note("%s took a counter-offer", client)
	case r.Reply.Contract != nil:
	case r.Err != nil && r.Took == nil:
		// The offer itself failed: neither countered nor rejected.
	case len(r.Reply.Counters) > 0:
		t.countered++
	default:
		t.rejected++
	}
}

// failed counts an error outside the negotiation.
func (t *Tally) failed(client string, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errors[bourse.ErrorCode(err)]++
	t.note("%s: %s", client, bourse.ErrorMessage(err))
}

func (t *Tally) opened(c protocol.ContractView) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running[c.ID] = c
	t.client(c.Client).Contracts++
	s := t.server(c.Server)
	s.Contracts++
	s.BusyGPUs += c.Terms.GPUs
	s.LastPrice = c.Terms.FullUsePrice().Decimal(6)
	t.note("%s → %s: %d GPU for %s at %s/GPU-s, %s escrowed", c.Client, c.Server, c.Terms.GPUs, c.Terms.TimeLimit, s.LastPrice.StringFixed(4), c.Terms.Prepayment)
}

func (t *Tally) closed(c protocol.ContractView) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.running[c.ID]; !ok {
		return
	}
	delete(t.running, c.ID)
	cl, s := t.client(c.Client), t.server(c.Server)
	s.BusyGPUs -= c.Terms.GPUs
	if c.State == contract.StateVoided {
		t.voided++
		cl.Refunded = cl.Refunded.Add(c.Refund)
		t.note("%s's contract on %s voided (%s)", c.Client, c.Server, c.Reason)
		return
	}
	t.settled[c.Reason]++
	cl.Done++
	cl.Spent, cl.Refunded = cl.Spent.Add(c.Charge), cl.Refunded.Add(c.Refund)
	s.Revenue = s.Revenue.Add(c.Charge)
	if c.Reading != nil {
		s.GPUSeconds = s.GPUSeconds.Add(c.Reading.U)
	}
	t.note("%s's contract on %s settled (%s): charged %s, refunded %s", c.Client, c.Server, c.Reason, c.Charge, c.Refund)
}

// Snapshot is a consistent copy of the tally.
type Snapshot struct {
	Elapsed                            time.Duration
	Offers, Countered, Rejected, Taken int
	Running, Voided                    int
	Settled                            map[contract.Reason]int
	Errors                             map[bourse.Code]int
	Clients                            map[string]ClientTally
	Servers                            map[string]ServerTally
	Log                                []string
}

// Snapshot copies the tally.
func (t *Tally) Snapshot() Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Snapshot{Elapsed: time.Since(t.started), Offers: t.offers, Countered: t.countered, Rejected: t.rejected, Taken: t.taken,
		Running: len(t.running), Voided: t.voided, Settled: map[contract.Reason]int{}, Errors: map[bourse.Code]int{},
		Clients: map[string]ClientTally{}, Servers: map[string]ServerTally{}, Log: slices.Clone(t.log)}
	for k, v := range t.settled {
		s.Settled[k] = v
	}
	for k, v := range t.errors {
		s.Errors[k] = v
	}
	for k, v := range t.clients {
		s.Clients[k] = *v
	}
	for k, v := range t.servers {
		s.Servers[k] = *v
	}
	return s
}

// SettledTotal counts settled contracts of every reason.
func (s Snapshot) SettledTotal() int {
	n := 0
	for _, v := range s.Settled {
		n += v
	}
	return n
}
