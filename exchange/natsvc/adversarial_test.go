package natsvc_test

// The adversarial suite: servers that lie about usage or attack each
// other, and contracts that cannot settle, against the exchange on the
// in-memory store and on PostgreSQL. Each test checks the charge of every
// contract against what really ran, not only that the books balance.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
)

// onStores runs test once on a new in-memory store and once on a new
// PostgreSQL database (skipped without one, but in CI).
func onStores(t *testing.T, test func(t *testing.T, store exchange.Store)) {
	t.Run("Memory", func(t *testing.T) { test(t, memStore()) })
	t.Run("PostgreSQL", func(t *testing.T) { test(t, sqlStore(t)) })
}

// memStore is a store in memory; sqlStore one on a fresh database.
func memStore() exchange.Store { return memstore.New(mem.New(mem.Options{})) }

func sqlStore(t *testing.T) exchange.Store {
	l, err := sqlledger.Open(context.Background(), pgtest.FreshDB(t), sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	s, err := sqlstore.Open(context.Background(), l)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

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

// TestTakeAllForNothing: right after the start a server publishes a final
// reading of a year of work at full use, dated in 2100. The exchange
// refuses it by its own clock and the contract settles on what could
// really have run.
func TestTakeAllForNothing(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, honest)
		m.wallet("alice", "100")
		srv := m.scriptedServer("gpu1", 1, accept)
		alice := m.client("alice")
		c := m.running(alice, terms("alice"))

		greedy := contract.Reading{Contract: c.ID, Seq: 1, U: dectest.D("600"), T: contract.Duration(8760 * time.Hour), S: dectest.D("1"),
			At: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), Final: true, Reason: contract.ReasonCompleted}
		srv.publish(greedy)
		nowish := greedy
		nowish.Seq, nowish.At = 2, time.Now().UTC() // a year of wall time in a second, dated now
		srv.publish(nowish)
		// Neither is stored; a believable reading is.
		time.Sleep(200 * time.Millisecond)
		got := m.contract(c.ID)
		assert.Equal(t, contract.StateRunning, got.State, "an unbelievable reading settled the contract")
		assert.Nil(t, got.Reading, "an unbelievable reading was stored")

		ran := time.Since(c.AcceptedAt)
		honestFinal := contract.Reading{Contract: c.ID, Seq: 3, U: dectest.D("0.5"), T: contract.Duration(ran), S: dectest.D("1"),
			At: time.Now().UTC(), Final: true, Reason: contract.ReasonCompleted}
		srv.publish(honestFinal)
		chargedFor(t, m.settled(c.ID, 5*time.Second), contract.ReasonCompleted, honestFinal.Usage())
		m.noOpenHold()
	})
}

// TestMalformedReadings: readings whose numbers no settlement can price
// (70 decimal places, 1e65, a share of 1e-70, negative energy) are refused
// on the way in and never stored, so the contract still settles.
func TestMalformedReadings(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, honest)
		m.wallet("alice", "100")
		srv := m.scriptedServer("gpu1", 1, accept)
		alice := m.client("alice")
		c := m.running(alice, terms("alice"))

		seventy := "0." + strings.Repeat("0", 69) + "1"
		at := time.Now().UTC().Format(time.RFC3339Nano)
		for i, body := range []string{
			`{"contract":"` + c.ID + `","seq":1,"u":"` + seventy + `","t":"0.1s","s":"1","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":2,"u":"1e65","t":"0.1s","s":"1","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":3,"u":"0","t":"0.1s","s":"1e-70","energy":"0","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":4,"u":"0","t":"0.1s","s":"1","energy":"-5","at":"` + at + `"}`,
			`{"contract":"` + c.ID + `","seq":5,"u":"0","t":"0.1s","s":"1","energy":"0","at":"` + at + `","extra":1}`,
		} {
			srv.publishRaw(c.ID, fmt.Sprintf("%s:%s:bad%d", srv.id, c.ID, i), []byte(body))
		}
		time.Sleep(200 * time.Millisecond)
		assert.Nil(t, m.contract(c.ID).Reading, "a malformed reading was stored")

		final := contract.Reading{Contract: c.ID, Seq: 6, U: dectest.D("0.2"), T: contract.Duration(200 * time.Millisecond), S: dectest.D("1"),
			At: time.Now().UTC(), Final: true, Reason: contract.ReasonCompleted}
		srv.publish(final)
		chargedFor(t, m.settled(c.ID, 5*time.Second), contract.ReasonCompleted, final.Usage())
		m.noOpenHold()
	})
}

// TestForeignMessageIDs: a server that lost the negotiation knows the
// contract's id and spends the winner's message ids on its own subject
// (JetStream de-duplicates ids across the stream). The winner, a real
// agent, still gets every reading counted and is paid for what it ran.
func TestForeignMessageIDs(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, func(c *exchange.Config) {
			honest(c)
			c.ReadingEvery = 200 * time.Millisecond // time for the attack to land first
		})
		m.wallet("alice", "100")
		m.agent("gpu1", 1)
		var attacker *scripted
		attacker = m.scriptedServer("mallory", 1, func(o protocol.ServerOffer) protocol.Decision {
			id := o.Offer[:strings.LastIndex(o.Offer, "-")] // the contract's id
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
	})
}

// TestUnregisteredCurrency: a server registered in CRED heartbeats in USD.
// It must not win USD offers: it has nowhere to be paid in USD, and the
// contract could never settle.
func TestUnregisteredCurrency(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, honest)
		ctx := context.Background()
		require.NoError(t, m.ledger.CreateCurrency(ctx, currency.Currency{Code: "USD", Scale: 2}))
		w, err := m.ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID("USD", "alice"), Currency: "USD", Kind: currency.Wallet})
		require.NoError(t, err)
		_, err = currency.Do(ctx, m.ledger, currency.Transfer{Key: "grant/usd", From: currency.IssuanceID("USD"), To: w.ID, Amount: dectest.D("100")})
		require.NoError(t, err)
		srv := m.scriptedServer("gpu1", 1, accept)
		beat := protocol.Hello{Currency: "USD", GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Free: 1}
		body, _ := json.Marshal(beat)
		for range 5 {
			require.NoError(t, srv.nc.Publish(protocol.ServerSubject("gpu1", protocol.VerbHeartbeat), body))
			time.Sleep(20 * time.Millisecond)
		}
		require.NoError(t, srv.nc.Flush())
		time.Sleep(100 * time.Millisecond)

		alice := m.client("alice")
		tm := terms("alice")
		tm.Currency = "USD"
		_, err = alice.Offer(ctx, "usd", tm)
		assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err), "an offer in USD went to a server with no USD account: %v", err)
		b := m.balance(w.ID)
		assert.True(t, b.Held.IsZero(), "USD escrowed: %s", b.Held)
		m.noOpenHold()
	})
}

// TestStuckContractsDoNotBlock: more contracts than one sweep looks at
// cannot settle (their server has no revenue account). The watchdog backs
// off from each, so a later silent contract still settles at once; and
// after StuckLimit the stuck ones end by the fixed rule, voided with a
// full refund since their capture keeps failing.
func TestStuckContractsDoNotBlock(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		const stuck = 30 // more than a sweep's batch
		m := newMarketOn(t, store, func(c *exchange.Config) {
			honest(c)
			c.SweepBatch = 20
			c.ServerLostAfter = 500 * time.Millisecond
			c.StuckLimit = 3 * time.Second
		})
		ctx := context.Background()
		m.wallet("alice", "100000")
		past := time.Now().Add(-time.Hour).UTC()
		for i := range stuck {
			c := contract.Contract{ID: fmt.Sprintf("ghost-%03d", i), Client: "alice", Server: "ghost", Terms: terms("alice"),
				State: contract.StateAccepted, AcceptedAt: past.Add(time.Duration(i) * time.Millisecond), StartDeadline: past.Add(time.Minute)}
			c.Terms.Server = "ghost"
			_, _, err := store.Open(ctx, c, "", currency.Reserve{Key: "escrow/" + c.ID, Hold: currency.HoldID(c.ID),
				From: currency.WalletID(cred, "alice"), Amount: c.Terms.Prepayment, Deadline: past.Add(24 * time.Hour)})
			require.NoError(t, err)
			_, err = store.Update(ctx, c.ID, func(c *contract.Contract) ([]currency.Op, error) {
				c.State, c.StartedAt, c.LastSeen = contract.StateRunning, past, past
				c.Reading = &contract.Reading{Contract: c.ID, Seq: 1, U: dectest.D("10"), T: contract.Duration(10 * time.Second), S: dectest.D("1"), At: past}
				return nil, nil
			})
			require.NoError(t, err)
		}

		srv := m.scriptedServer("gpu1", 1, accept)
		alice := m.client("alice")
		c := m.running(alice, terms("alice"))
		r := reading(c.ID, 1, "0.1", 0, false)
		r.T = contract.Duration(100 * time.Millisecond)
		srv.publish(r)
		got := m.settled(c.ID, 5*time.Second) // silent: settles within a few sweeps
		chargedFor(t, got, contract.ReasonServerLost, r.Usage())

		list, err := store.Stuck(ctx, 0)
		require.NoError(t, err)
		assert.Len(t, list, stuck, "every ghost contract is marked stuck")
		for _, g := range list {
			assert.Contains(t, g.Stuck.Error, "no account", "%s", g.ID)
			assert.True(t, g.Stuck.Retry.After(g.Stuck.Since), "%s is backed off", g.ID)
		}

		// The fixed rule: voided, the whole prepayment back.
		for i := range stuck {
			g := m.settled(fmt.Sprintf("ghost-%03d", i), 15*time.Second)
			assert.Equal(t, contract.StateVoided, g.State)
			assert.Equal(t, contract.ReasonExpired, g.Reason)
			assert.True(t, g.Refund.Equal(g.Terms.Prepayment))
		}
		list, err = store.Stuck(ctx, 0)
		require.NoError(t, err)
		assert.Empty(t, list)
		m.noOpenHold()
	})
}

// TestHoldsExpire: a server that keeps sending readings but never a final
// one, long past the time limit. When the hold is due the contract
// settles on its last reading (time clamped to the limit), reason
// expired: no escrow stays open for ever.
func TestHoldsExpire(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, func(c *exchange.Config) {
			honest(c)
			// Long enough that a loaded machine's stall (the race
			// detector, parallel packages) does not look like a silent
			// server: the rule under test is the hold's deadline.
			c.ServerLostAfter = 1500 * time.Millisecond
			c.StartTimeout = 500 * time.Millisecond
			c.StuckLimit = 500 * time.Millisecond
		})
		m.wallet("alice", "100")
		srv := m.scriptedServer("gpu1", 1, accept)
		alice := m.client("alice")
		tm := terms("alice")
		tm.TimeLimit = time.Second
		tm.Prepayment = dectest.D("0.01")
		c := m.running(alice, tm)

		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		last := make(chan contract.Reading, 1000)
		go func() {
			for seq := uint64(1); ctx.Err() == nil; seq++ {
				r := contract.Reading{Contract: c.ID, Seq: seq, U: dectest.D("0.5"), T: contract.Duration(time.Since(c.AcceptedAt)),
					S: dectest.D("1"), At: time.Now().UTC()}
				body, _ := json.Marshal(r)
				if _, err := srv.js.Publish(ctx, protocol.UsageSubject(srv.id, c.ID), body, jetstream.WithMsgID(protocol.MsgID(srv.id, r))); err == nil {
					last <- r
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
		got := m.settled(c.ID, 10*time.Second)
		stop()
		require.NotNil(t, got.Reading)
		chargedFor(t, got, contract.ReasonExpired, got.Reading.Usage())
		assert.Greater(t, time.Duration(got.Reading.T), tm.TimeLimit, "it ran past its limit before the rule ended it")
		m.noOpenHold()
	})
}

// TestFreshExchangeWaitsForStrandedReadings: an exchange instance took a
// final reading and died before acknowledging it; a fresh instance starts
// after the contract's last counted reading is older than
// ServerLostAfter. It must give the stream time to hand the reading out
// again (AckWait) before judging the server lost: the contract settles
// on its final reading, as completed.
func TestFreshExchangeWaitsForStrandedReadings(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, func(c *exchange.Config) {
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

		// The instance dies, and stays down past ServerLostAfter; its last
		// act was to take the final reading.
		m.exStop()
		time.Sleep(m.cfg.ServerLostAfter + 200*time.Millisecond)
		final := reading(c.ID, 2, "0.3", 0, true)
		final.T = contract.Duration(300 * time.Millisecond)
		srv.publish(final)
		zombie := natstest.Connect(t, m.ns, "")
		js, err := jetstream.New(zombie)
		require.NoError(t, err)
		cons, err := js.Consumer(context.Background(), protocol.UsageStream, "exchange")
		require.NoError(t, err)
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(500*time.Millisecond))
		require.NoError(t, err)
		for range batch.Messages() { // taken, never acknowledged
		}
		zombie.Close()

		m.startExchange()
		got := m.settled(c.ID, 5*time.Second)
		chargedFor(t, got, contract.ReasonCompleted, final.Usage())
		m.noOpenHold()
	})
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
	var gpus []contract.GPU
	for i := range n {
		gpus = append(gpus, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
	}
	a, err := agent.New(agent.Config{
		ID: id, Currency: currency.Currency{Code: cred, Scale: 2}, GPUs: gpus, Policy: policy,
		Conn:   natstest.Connect(m.t, m.ns, protocol.InboxPrefix(id)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
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
