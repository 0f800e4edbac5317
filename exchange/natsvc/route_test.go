package natsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// deliveries counts what the exchange delivers to servers, by verb and
// server, as NATS carries it.
type deliveries struct {
	t  testing.TB
	nc *nats.Conn
	ch chan *nats.Msg
}

func (m *market) countDeliveries() *deliveries {
	m.t.Helper()
	d := &deliveries{t: m.t, nc: natstest.Connect(m.t, m.ns, ""), ch: make(chan *nats.Msg, 4096)}
	_, err := d.nc.ChanSubscribe(protocol.DeliverSubject("*", "*"), d.ch)
	require.NoError(m.t, err)
	require.NoError(m.t, d.nc.Flush())
	return d
}

// take returns the servers delivered each verb since the last take, in
// order. Everything the exchange published before take was called is
// counted: NATS answers the flush on this connection after the messages
// before it, which its reader has put in the channel by then.
func (d *deliveries) take() map[string][]string {
	d.t.Helper()
	require.NoError(d.t, d.nc.Flush())
	out := map[string][]string{}
	for {
		select {
		case msg := <-d.ch:
			t := strings.Split(msg.Subject, ".")
			out[t[len(t)-1]] = append(out[t[len(t)-1]], t[len(t)-2])
		default:
			return out
		}
	}
}

// TestRoutedToAFew, over NATS with real agents publishing their asks: an
// offer is delivered to at most RouteTo servers, the cheapest whose asks
// it meets; a quote is delivered to none; an offer below every ask is
// delivered to none and answered with counter-offers built from the
// cheapest asks, the first of which, taken at once, its server accepts.
func TestRoutedToAFew(t *testing.T) {
	// A long negotiation: the next server is asked beside a slow one after
	// an eighth of it, and a loaded machine is slow.
	m := newMarket(t, func(c *exchange.Config) { c.RouteTo, c.Negotiation = 2, 8*time.Second })
	m.wallet("alice", "100")
	for i := range 6 {
		m.postedAgent(fmt.Sprintf("s%d", i), 4, fmt.Sprintf("0.00%d", i+1))
	}
	waitFor(t, "six servers' hellos", func() bool { return m.ex.LiveServers() == 6 })
	d := m.countDeliveries()
	alice := m.client("alice")
	ctx := context.Background()

	tm := terms("alice") // 0.01 a GPU-second: every ask met
	q, err := alice.Quote(ctx, tm)
	require.NoError(t, err)
	assert.Equal(t, []string{"s0", "s1"}, q.Accepts, "the two cheapest, cheapest first")
	r, err := alice.Offer(ctx, "first", tm)
	require.NoError(t, err)
	require.NotNil(t, r.Contract, "%+v", r)
	delivered := d.take()
	assert.Empty(t, delivered[protocol.DeliverQuote], "a quote asks no server")
	offered := delivered[protocol.DeliverOffer]
	assert.Equal(t, []string{"s0"}, offered, "the cheapest of the RouteTo, asked first, accepts: no other asked")
	assert.Equal(t, "s0", r.Contract.Server)

	low := terms("alice")
	low.P, low.Prepayment = contract.Flat(dectest.D("0.0005")), dectest.D("0.3")
	r, err = alice.Offer(ctx, "low", low)
	require.NoError(t, err)
	require.Nil(t, r.Contract)
	assert.Empty(t, d.take()[protocol.DeliverOffer], "no ask met: no server asked")
	require.Len(t, r.Counters, 2, "%+v", r)
	for _, k := range r.Counters {
		assert.True(t, strings.HasPrefix(k.ID, "ask-"), "a counter-offer from an ask: %s", k.ID)
		assert.Contains(t, []string{"s0", "s1", "s2"}, k.Server, "from the cheapest asks with room")
	}
	k := r.Counters[0]
	got, err := alice.Take(ctx, "take", k)
	require.NoError(t, err)
	require.NotNil(t, got.Contract, "the counter-offer built from %s's ask, taken at once: %+v", k.Server, got)
	assert.Equal(t, k.Server, got.Contract.Server)
	assert.True(t, got.Contract.Terms.P.Equal(k.Terms.P))
	assert.Equal(t, []string{k.Server}, d.take()[protocol.DeliverOffer], "the counter's server alone is asked")
	m.audit()
}

// TestStaleAskCostsARefusal: a server's ask says less than its policy
// takes now (its ask is stale, or it lies). An offer meeting the ask is
// delivered to it and refused; a counter-offer built from the ask and
// taken is refused too: no contract, no money held, nothing moved.
func TestStaleAskCostsARefusal(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	asks := func(h *protocol.Hello) {
		h.Ask = &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 1, Free: 1,
			P: contract.Flat(dectest.D("0.005"))}}}
	}
	m.scriptedWith("stale", 1, asks, func(protocol.ServerOffer) protocol.Decision {
		return protocol.Decision{Reason: "the price went up"}
	})
	d := m.countDeliveries()
	alice := m.client("alice")
	ctx := context.Background()
	wallet := m.balance(currency.WalletID(cred, "alice"))

	r, err := alice.Offer(ctx, "meets", terms("alice"))
	require.NoError(t, err)
	assert.Nil(t, r.Contract)
	require.Len(t, r.Rejections, 1, "%+v", r)
	assert.Equal(t, "stale", r.Rejections[0].Server)
	assert.Contains(t, r.Rejections[0].Reason, "the price went up")

	low := terms("alice")
	low.P, low.Prepayment = contract.Flat(dectest.D("0.001")), dectest.D("0.6")
	r, err = alice.Offer(ctx, "below", low)
	require.NoError(t, err)
	require.Len(t, r.Counters, 1, "%+v", r)
	got, err := alice.Take(ctx, "take", r.Counters[0])
	require.NoError(t, err, "a refused counter is an answer, not an error")
	assert.Nil(t, got.Contract)
	require.Len(t, got.Rejections, 1, "%+v", got)
	assert.Contains(t, got.Rejections[0].Reason, "the price went up")

	assert.Equal(t, []string{"stale", "stale"}, d.take()[protocol.DeliverOffer], "the offer that met the ask, and the counter taken")
	assert.Equal(t, wallet, m.balance(currency.WalletID(cred, "alice")), "no money held or moved")
	cs, err := alice.Contracts(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, cs)
	m.audit()
}

// TestClaimHeardNotCountedTwice: a server says its claim in a heartbeat
// while the negotiation is still on (an agent speaks soon after a
// claim); the exchange then takes the server's word for its room, and
// does not take the contract's GPUs out of it a second time: the other
// GPU is still there for the next offer. (Counted twice, the room was
// short until the next heartbeat, and offers were turned away with "no
// live server has 1 GPUs free".)
func TestClaimHeardNotCountedTwice(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	ask := func(free int) *protocol.Ask {
		return &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 2, Free: free,
			P: contract.Flat(dectest.D("0.001"))}}}
	}
	alice := m.client("alice")
	var srv *scripted
	srv = m.scriptedWith("gpu1", 2, func(h *protocol.Hello) { h.Ask = ask(2) }, func(protocol.ServerOffer) protocol.Decision {
		// The claim, said at once, and heard before the accept.
		body, _ := json.Marshal(protocol.Hello{Currency: cred, GPUs: srv.gpus, Free: 1, Ask: ask(1), At: time.Now().UTC()})
		require.NoError(t, srv.nc.Publish(protocol.ServerSubject("gpu1", protocol.VerbHeartbeat), body))
		waitFor(t, "the heartbeat heard", func() bool {
			ss, err := alice.Servers(context.Background(), cred)
			return err == nil && len(ss) == 1 && ss[0].Free == 1
		})
		return accept(protocol.ServerOffer{})
	})
	r, err := alice.Offer(context.Background(), "first", terms("alice"))
	require.NoError(t, err)
	require.NotNil(t, r.Contract, "%+v", r)
	q, err := alice.Quote(context.Background(), terms("alice"))
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu1"}, q.Accepts, "gpu1's other GPU: %+v", q)
}

// TestRetryTakesNoRoom: a retried offer whose first try made a contract
// negotiates again, is accepted and cancelled (the escrow finds the
// contract made), and is answered that contract. Only the contract made
// takes its GPUs out of the server's ask: counted for every retry, the
// room fell to nothing until the server's next heartbeat, and offers
// were turned away with "no live server has 1 GPUs free now".
func TestRetryTakesNoRoom(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.scriptedWith("gpu1", 2, func(h *protocol.Hello) {
		h.Ask = &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 2, Free: 2,
			P: contract.Flat(dectest.D("0.001"))}}}
	}, accept)
	alice := m.client("alice")
	ctx := context.Background()
	first, err := alice.Offer(ctx, "first", terms("alice"))
	require.NoError(t, err)
	require.NotNil(t, first.Contract, "%+v", first)
	for range 3 {
		again, err := alice.Offer(ctx, "first", terms("alice"))
		require.NoError(t, err)
		require.NotNil(t, again.Contract, "%+v", again)
		assert.Equal(t, first.Contract.ID, again.Contract.ID)
	}
	q, err := alice.Quote(ctx, terms("alice"))
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu1"}, q.Accepts, "gpu1's other GPU, after one contract and three retries of it: %+v", q)
}

// TestAsksTheFewItNeeds: with honest asks every server takes the offer,
// and an offer is delivered to the cheapest alone, not to RouteTo of
// them: one accept, nothing claimed and cancelled. Where the cheapest
// refuse (their asks were stale), the next are asked, one by one, and
// the offer still finds the server that takes it.
func TestAsksTheFewItNeeds(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) { c.Negotiation = 8 * time.Second }) // RouteTo 8, FanOut 1; as TestRoutedToAFew
	m.wallet("alice", "100")
	for i := range 6 {
		m.postedAgent(fmt.Sprintf("s%d", i), 4, fmt.Sprintf("0.00%d", i+1))
	}
	waitFor(t, "six servers' hellos", func() bool { return m.ex.LiveServers() == 6 })
	d := m.countDeliveries()
	alice := m.client("alice")
	ctx := context.Background()
	for i := range 3 {
		r, err := alice.Offer(ctx, fmt.Sprint("honest-", i), terms("alice"))
		require.NoError(t, err)
		require.NotNil(t, r.Contract, "%+v", r)
		assert.Equal(t, "s0", r.Contract.Server, "the cheapest")
		assert.Equal(t, []string{"s0"}, d.take()[protocol.DeliverOffer], "delivered to the cheapest alone")
	}

	// Three servers that ask less than any agent; the two cheapest refuse
	// what their asks say they take.
	for i, decide := range []func(protocol.ServerOffer) protocol.Decision{reject, reject, accept} {
		price := fmt.Sprintf("0.000%d", i+1)
		m.scriptedWith(fmt.Sprintf("r%d", i), 2, func(h *protocol.Hello) {
			h.Ask = &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 2, Free: 2, P: contract.Flat(dectest.D(price))}}}
		}, decide)
	}
	waitFor(t, "nine servers", func() bool { return m.ex.LiveServers() == 9 })
	d.take()
	r, err := alice.Offer(ctx, "stale", terms("alice"))
	require.NoError(t, err)
	require.NotNil(t, r.Contract, "%+v", r)
	assert.Equal(t, "r2", r.Contract.Server, "the cheapest that takes it")
	assert.Equal(t, []string{"r0", "r1", "r2"}, d.take()[protocol.DeliverOffer], "the cheapest first, the next once it refused")

	// The cheapest of all slow to answer: the next are asked beside it
	// after an eighth of the negotiation time (1 s here), not after all of
	// it; its accept, late, is cancelled.
	m.scriptedWith("slow", 2, func(h *protocol.Hello) {
		h.Ask = &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 2, Free: 2, P: contract.Flat(dectest.D("0.00001"))}}}
	}, func(o protocol.ServerOffer) protocol.Decision {
		time.Sleep(3 * time.Second)
		return accept(o)
	})
	waitFor(t, "ten servers", func() bool { return m.ex.LiveServers() == 10 })
	start := time.Now()
	r, err = alice.Offer(ctx, "slow", terms("alice"))
	require.NoError(t, err)
	require.NotNil(t, r.Contract, "%+v", r)
	assert.Equal(t, "r2", r.Contract.Server)
	assert.Less(t, time.Since(start), 3*time.Second, "not held up by the slow one")
	assert.Equal(t, []string{"slow", "r0", "r1", "r2"}, d.take()[protocol.DeliverOffer])
}

func reject(protocol.ServerOffer) protocol.Decision { return protocol.Decision{Reason: "not today"} }
