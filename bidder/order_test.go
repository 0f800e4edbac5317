package bidder_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestCountersInOneOrder: counter-offers come over the wire in the order
// their servers answered; a Client hands them on in their one order
// (strategy.CompareCounters: cheapest first, then by server, then by
// id), in an offer's reply, a quote's and a waiting offer's event alike.
func TestCountersInOneOrder(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns, "")
	counter := func(id, server, price string) contract.Counter {
		return contract.Counter{ID: id, Server: server, Terms: contract.Terms{GPUs: 1, P: contract.Flat(dectest.D(price))}}
	}
	// As the servers answered: dearest first, a tie on price and server.
	answered := []contract.Counter{counter("k9", "gpu3", "0.003"), counter("k2", "gpu2", "0.001"), counter("k1", "gpu2", "0.001"), counter("k5", "gpu1", "0.002")}
	want := []string{"k1", "k2", "k5", "k9"}
	for verb, reply := range map[string]any{
		protocol.VerbOffer: protocol.OfferReply{Counters: answered},
		protocol.VerbQuote: protocol.QuoteReply{Counters: answered},
	} {
		body, err := json.Marshal(reply)
		require.NoError(t, err)
		_, err = nc.Subscribe(protocol.ClientSubject("ada", verb), func(m *nats.Msg) { _ = m.Respond(body) })
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL()})
	require.NoError(t, err)
	defer ada.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids := func(ks []contract.Counter) []string {
		var out []string
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}

	r, err := ada.Offer(ctx, "r1", contract.Terms{})
	require.NoError(t, err)
	assert.Equal(t, want, ids(r.Counters), "an offer's reply")
	q, err := ada.Quote(ctx, contract.Terms{})
	require.NoError(t, err)
	assert.Equal(t, want, ids(q.Counters), "a quote's reply")

	events, err := ada.Events(ctx, 1)
	require.NoError(t, err)
	body, err := json.Marshal(protocol.Event{Type: protocol.EventCountered, Counters: answered})
	require.NoError(t, err)
	require.NoError(t, nc.Publish(protocol.DeliverSubject("ada", protocol.DeliverEvent), body))
	select {
	case ev := <-events:
		assert.Equal(t, want, ids(ev.Counters), "a waiting offer's event")
	case <-ctx.Done():
		t.Fatal("no event")
	}
}
