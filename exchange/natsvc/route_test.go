package natsvc_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
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

// The rules of a server's room (a stale ask costs a refusal, a claim
// heard in a heartbeat is not counted twice, a retry takes no room) are
// tested in package exchange on the manual clock (room_test.go).

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
