package natsvc_test

// Servers that attack each other through what NATS carries (the usage
// stream's message ids). The House's own defences against servers that
// lie, and contracts that cannot settle, are tested on its manual clock,
// on both stores (exchange/adversarial_test.go).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// honest is the exchange's default trust in clocks: readings are judged
// by the exchange's own.
func honest(c *exchange.Config) { c.ClockSkew = 0 }

// running offers alice's terms t and waits until the contract runs.
func (m *market) running(client *bidder.Client, t contract.Terms) contract.Contract {
	m.t.Helper()
	reply, err := client.Offer(context.Background(), fmt.Sprintf("job-%d", time.Now().UnixNano()), t)
	require.NoError(m.t, err)
	require.NotNil(m.t, reply.Contract, "%+v", reply)
	id := reply.Contract.ID
	waitFor(m.t, "the start", func() bool {
		c, err := m.store.Contract(context.Background(), id)
		return err == nil && c.State == contract.StateRunning
	})
	return m.contract(id)
}

func (m *market) contract(id string) contract.Contract {
	m.t.Helper()
	c, err := m.store.Contract(context.Background(), id)
	require.NoError(m.t, err)
	return c
}

// settled waits for contract id to settle or void and returns it.
func (m *market) settled(id string, within time.Duration) contract.Contract {
	m.t.Helper()
	deadline := time.Now().Add(within)
	for {
		c := m.contract(id)
		if !c.HoldsEscrow() {
			return c
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("contract %s still %s after %v (stuck: %+v)", id, c.State, within, c.Stuck)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// chargedFor requires c to be settled for reason at the charge of usage,
// as the pricing package prices it.
func chargedFor(t *testing.T, c contract.Contract, reason contract.Reason, u contract.Usage) {
	t.Helper()
	require.Equal(t, contract.StateSettled, c.State)
	assert.Equal(t, reason, c.Reason)
	want, err := contract.Charge(c.Terms, u, 2)
	require.NoError(t, err)
	assert.True(t, want.Charge.Equal(c.Charge), "charged %s; what ran costs %s", c.Charge, want.Charge)
	assert.True(t, c.Charge.Add(c.Refund).Equal(c.Terms.Prepayment))
}

// noOpenHold requires a clean audit with every escrow resolved.
func (m *market) noOpenHold() {
	m.t.Helper()
	rep := m.audit()
	assert.Zero(m.t, rep.OpenHolds, "an escrow is stuck")
}

// TestForeignMessageIDs: a server that lost the negotiation knows the
// contract's id (the offer id no longer tells it, but anyone who knows
// the client and its request id can work it out) and spends the
// winner's message ids on its own subject (JetStream de-duplicates ids
// across the stream). The winner, a real agent, still gets every
// reading counted and is paid for what it ran.
func TestForeignMessageIDs(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) {
		honest(c)
		c.ReadingEvery = 200 * time.Millisecond // time for the attack to land first
	})
	m.wallet("alice", "100")
	m.agent("gpu1", 1)
	var attacker *scripted
	attacker = m.scriptedServer("mallory", 1, func(o protocol.ServerOffer) protocol.Decision {
		id := contractIDOf("alice", "spent-ids")
		for seq := uint64(1); seq <= 40; seq++ {
			r := contract.Reading{Contract: id, Seq: seq, U: dectest.D("0"), T: 0, S: dectest.D("0"), At: time.Now().UTC()}
			body, _ := json.Marshal(r)
			// Every id the winner's readings could have, were ids
			// predictable: today's form and the earlier ones.
			for _, msgID := range []string{id + ":" + fmt.Sprint(seq), "gpu1:" + id + ":" + fmt.Sprint(seq), protocol.MsgID("gpu1", r)} {
				attacker.publishRaw(id, msgID, body)
			}
		}
		return protocol.Decision{Reason: "not today"}
	})
	alice := m.client("alice")
	tm := terms("alice")
	tm.Job.Profile.Duration = 600 * time.Millisecond
	reply, err := alice.Offer(context.Background(), "spent-ids", tm)
	require.NoError(t, err)
	require.NotNil(t, reply.Contract)
	assert.Equal(t, "gpu1", reply.Contract.Server)

	c := m.settled(reply.Contract.ID, 10*time.Second)
	require.NotNil(t, c.Reading)
	assert.True(t, c.Reading.Final, "settled on a reading that was not final: the final one was blocked")
	chargedFor(t, c, contract.ReasonCompleted, c.Reading.Usage())
	assert.True(t, c.Reading.U.GreaterThanOrEqual(dectest.D("0.5")), "the agent ran 0.6 GPU-seconds; counted %s", c.Reading.U)
	m.noOpenHold()
}

// agent runs a real GPU server agent with n synthetic GPUs against the
// market's exchange until the test ends.
func (m *market) agent(id string, n int) *agent.Agent {
	m.t.Helper()
	return m.agentWith(id, n, nil)
}

// agentWith runs a real GPU server agent with n synthetic H100s and
// policy (nil: server.Posted{}) until the test ends.
func (m *market) agentWith(id string, n int, policy server.Policy) *agent.Agent {
	m.t.Helper()
	return m.agentTuned(id, n, func(c *agent.Config) { c.Policy = policy })
}

// agentTuned runs a real GPU server agent with n synthetic H100s, its
// configuration as tune leaves it, until the test ends.
func (m *market) agentTuned(id string, n int, tune func(*agent.Config)) *agent.Agent {
	m.t.Helper()
	var gpus []contract.GPU
	for i := range n {
		gpus = append(gpus, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
	}
	cfg := agent.Config{
		ID: id, Currency: currency.Currency{Code: cred, Scale: 2}, GPUs: gpus,
		Conn:   natstest.Connect(m.t, m.ns, protocol.InboxPrefix(id)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	tune(&cfg)
	a, err := agent.New(cfg)
	require.NoError(m.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	m.t.Cleanup(func() { cancel(); <-done })
	waitFor(m.t, "the agent's hello", func() bool { return m.ex.LiveServers() > 0 })
	return a
}

// publishRaw puts body on the server's usage subject of contract id under
// msgID, as a server may, whatever it contains.
func (s *scripted) publishRaw(id, msgID string, body []byte) {
	s.t.Helper()
	msg := nats.NewMsg(protocol.UsageSubject(s.id, id))
	msg.Data = body
	_, err := s.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID))
	if errors.Is(err, nats.ErrConnectionClosed) {
		return // an offer delivered as the test closed the market: its attack is moot
	}
	require.NoError(s.t, err)
}
