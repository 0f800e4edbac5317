package natsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestUndeliveredReadingsHoldTheSweep: the usage consumer stops
// handing readings out while its pulls still get their heartbeats (paused
// by an operator here; a consumer at its MaxAckPending does the same), and
// a contract's final reading waits in the stream meanwhile. NATS is up,
// the stream has its leader, the pulls hear their heartbeats: only the
// consumer's own position says that readings wait. The sweep must not
// take the contract's silence for its server's loss: once the consumer
// delivers again, the contract settles on its final reading, as completed.
func TestUndeliveredReadingsHoldTheSweep(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) {
		honest(c)
		c.ServerLostAfter = time.Second
		c.ReadingEvery = 100 * time.Millisecond
	})
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 1, accept)
	alice := m.client("alice")
	c := m.running(alice, terms("alice"))
	first := reading(c.ID, 1, "0.1", 0, false)
	first.T = contract.Duration(100 * time.Millisecond)
	srv.publish(first)
	waitFor(t, "the first reading", func() bool { return m.contract(c.ID).Reading != nil })

	js, err := jetstream.New(natstest.Connect(t, m.ns, ""))
	require.NoError(t, err)
	ctx := context.Background()
	_, err = js.PauseConsumer(ctx, protocol.UsageStream, "exchange", time.Now().Add(time.Hour))
	require.NoError(t, err)
	final := reading(c.ID, 2, "0.3", 0, true)
	final.T = contract.Duration(300 * time.Millisecond)
	srv.publish(final)
	// Three times ServerLostAfter with the final reading in the stream,
	// undelivered.
	time.Sleep(3 * m.cfg.ServerLostAfter)
	require.True(t, m.contract(c.ID).HoldsEscrow(), "settled as %s while its final reading waited in the stream", m.contract(c.ID).Reason)

	_, err = js.ResumeConsumer(ctx, protocol.UsageStream, "exchange")
	require.NoError(t, err)
	got := m.settled(c.ID, 5*time.Second)
	chargedFor(t, got, contract.ReasonCompleted, final.Usage())
	m.noOpenHold()
}
