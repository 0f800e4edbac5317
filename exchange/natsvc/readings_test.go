package natsvc_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/metrictest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/signing"
)

// publishReadings publishes one readings message of rs, each signed by
// sig ("" for none), under its message id.
func (s *scripted) publishReadings(rs []contract.Reading, sig func([]byte) string) {
	s.t.Helper()
	var signs []func([]byte) string
	for range rs {
		signs = append(signs, sig)
	}
	s.publishBatch(rs, signs)
}

// publishBatch publishes one readings message of rs, rs[i] signed by
// signs[i], under its message id.
func (s *scripted) publishBatch(rs []contract.Reading, signs []func([]byte) string) {
	s.t.Helper()
	var bodies [][]byte
	var sigs []string
	for i, r := range rs {
		b, _ := json.Marshal(r)
		bodies, sigs = append(bodies, b), append(sigs, signs[i](b))
	}
	data := protocol.AppendReadings(nil, bodies, sigs)
	msg := nats.NewMsg(protocol.ReadingsSubject(s.id))
	msg.Data = data
	_, err := s.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(protocol.ReadingsMsgID(s.id, data)))
	require.NoError(s.t, err)
}

// readingsResult is how many readings the exchange counted with result
// (bourse_exchange_readings_total).
func readingsResult(t testing.TB, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, "bourse_exchange_readings_total", "result", result)
}

// signedMarket is a market whose exchange requires the servers' keys'
// signatures on readings, its metrics in reg; its contracts are not
// lost for a minute of silence, so that the test's contracts run until
// their readings say otherwise.
func signedMarket(t *testing.T, keys signing.Keys) (*market, *prometheus.Registry) {
	t.Helper()
	m := newMarket(t, func(c *exchange.Config) { honest(c); c.Verifier = keys; c.ServerLostAfter = time.Minute })
	m.exStop()
	reg := prometheus.NewRegistry()
	m.cfg.Metrics = reg
	m.startExchange()
	return m, reg
}

// signWith signs with s, failing the test if it cannot.
func signWith(t *testing.T, s signing.Signer) func([]byte) string {
	return func(b []byte) string {
		sig, err := s.Sign(b)
		require.NoError(t, err)
		return sig
	}
}

// TestReadingsMessage: a server's readings message carries several
// contracts' readings, each signed, and each counts as it would on its
// own: stored per contract, a final one settles. In one message, a
// reading signed by another key and a reading of another server's
// contract are refused, each alone: the readings before and after them
// count.
func TestReadingsMessage(t *testing.T) {
	gpu1Key, gpu2Key, forger := signer(t), signer(t), signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\ngpu2 " + gpu2Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m, reg := signedMarket(t, keys)
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 3, accept)
	other := m.scriptedServer("gpu2", 1, accept)
	sign, forged, unsigned := signWith(t, gpu1Key), signWith(t, forger), func([]byte) string { return "" }
	srv.setSign(sign)
	other.setSign(signWith(t, gpu2Key))
	alice := m.client("alice")
	on := func(server string) contract.Contract {
		tm := terms("alice")
		tm.Server = server
		return m.running(alice, tm)
	}
	a, b, c, d := on("gpu1"), on("gpu1"), on("gpu1"), on("gpu2")

	srv.publishReadings([]contract.Reading{reading(a.ID, 1, "1", 1, false), reading(b.ID, 1, "1", 1, true)}, sign)
	waitFor(t, "a's reading stored and b settled", func() bool {
		return m.contract(a.ID).Reading != nil && m.contract(b.ID).State == contract.StateSettled
	})
	assert.NotNil(t, m.contract(b.ID).Signed, "the final reading's bytes and signature are on the record")
	chargedFor(t, m.contract(b.ID), contract.ReasonCompleted, m.contract(b.ID).Reading.Usage())

	// a's reading 2 forged, c's final unsigned, gpu2's contract d's final
	// signed by gpu1: each refused alone; c's reading 1 before them and
	// a's reading 3 after them count.
	srv.publishBatch([]contract.Reading{
		reading(c.ID, 1, "1", 1, false), reading(a.ID, 2, "2", 2, true), reading(c.ID, 2, "2", 2, true),
		reading(d.ID, 1, "1", 1, true), reading(a.ID, 3, "3", 3, false),
	}, []func([]byte) string{sign, forged, unsigned, sign, sign})
	waitFor(t, "a's third reading and c's first stored", func() bool {
		return m.contract(a.ID).Reading.Seq == 3 && m.contract(c.ID).Reading != nil
	})
	waitFor(t, "the two readings without gpu1's signature and gpu2's contract's refused", func() bool {
		return readingsResult(t, reg, "bad_signature") == 2 && readingsResult(t, reg, "rejected") == 1
	})
	assert.Equal(t, contract.StateRunning, m.contract(a.ID).State, "a forged final reading settles nothing")
	assert.Equal(t, contract.StateRunning, m.contract(c.ID).State, "an unsigned final reading settles nothing")
	assert.Equal(t, uint64(1), m.contract(c.ID).Reading.Seq)
	assert.Equal(t, contract.StateRunning, m.contract(d.ID).State, "gpu1's word does not settle gpu2's contract")
	assert.Nil(t, m.contract(d.ID).Reading)
	m.audit()
}

// TestReadingsCountOnce: a reading counts once however often it comes:
// the same readings message again (a retry: the stream drops it by its
// message id), the final reading in another message beside a new
// reading (a batch made again after an agent's restart), the final
// reading alone on its contract's subject (the outbox's and a
// reconnect's resend, finalsAgain), and a later final reading after the
// settlement: the contract is settled once, at the first final
// reading's charge, and no money moves again.
func TestReadingsCountOnce(t *testing.T) {
	gpu1Key := signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m, reg := signedMarket(t, keys)
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	sign := signWith(t, gpu1Key)
	srv.setSign(sign)
	alice := m.client("alice")
	a, b := m.running(alice, terms("alice")), m.running(alice, terms("alice"))

	final := reading(b.ID, 2, "2", 2, true)
	first := []contract.Reading{reading(a.ID, 1, "1", 1, false), reading(b.ID, 1, "1", 1, false), final}
	srv.publishReadings(first, sign)
	waitFor(t, "b settled, and the three readings counted", func() bool {
		return m.contract(b.ID).State == contract.StateSettled && readingsResult(t, reg, "counted") == 3
	})
	settled := m.contract(b.ID)
	chargedFor(t, settled, contract.ReasonCompleted, final.Usage())
	wallet := m.balance(currency.WalletID(cred, "alice"))

	srv.publishReadings(first, sign) // the same message: the stream drops it
	srv.publishReadings([]contract.Reading{final, reading(a.ID, 2, "2", 2, false)}, sign)
	body, _ := json.Marshal(final)
	srv.publishRawSigned(b.ID, protocol.MsgID("gpu1", final), body, sign(body))
	later := reading(b.ID, 3, "9", 9, true)
	later.Reason = contract.ReasonKilled
	srv.publishReadings([]contract.Reading{later}, sign)
	// b's final twice more (the identical message is dropped by the
	// stream) and its later reading: each stale. a's
	// second reading counts, and nothing else: counters only grow, so a
	// reading counted twice leaves the wait to time out.
	waitFor(t, "a's second reading counted and b's three stale", func() bool {
		return m.contract(a.ID).Reading.Seq == 2 && readingsResult(t, reg, "stale") == 3 && readingsResult(t, reg, "counted") == 4
	})
	again := m.contract(b.ID)
	assert.Equal(t, settled.Reading.Seq, again.Reading.Seq)
	assert.True(t, settled.Charge.Equal(again.Charge), "charged %s, then %s", settled.Charge, again.Charge)
	assert.Equal(t, contract.ReasonCompleted, again.Reason)
	assert.Equal(t, wallet, m.balance(currency.WalletID(cred, "alice")), "alice's money moved again")
	m.audit()
}

// TestAgentReadingsPerServer: an agent running several contracts sends
// their readings together, in fewer messages than readings, none on a
// contract's own subject; and the exchange stores every contract's
// readings all the same.
func TestAgentReadingsPerServer(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.postedAgent("gpu1", 4, "0.001")
	waitFor(t, "gpu1's hello", func() bool { return m.ex.LiveServers() == 1 })
	var perContract, messages, carried atomic.Int64
	nc := natstest.Connect(t, m.ns, "")
	_, err := nc.Subscribe(protocol.ServerSubject("gpu1", ">"), func(msg *nats.Msg) {
		switch {
		case strings.HasPrefix(msg.Subject, protocol.ServerSubject("gpu1", protocol.VerbUsage)+"."):
			perContract.Add(1)
		case msg.Subject == protocol.ReadingsSubject("gpu1"):
			if rs, err := protocol.DecodeReadings(msg.Data); err == nil {
				messages.Add(1)
				carried.Add(int64(len(rs.Readings)))
			}
		}
	})
	require.NoError(t, err)
	alice := m.client("alice")
	long := terms("alice")
	long.Job.Profile.Duration = time.Minute
	var ids []string
	for range 4 {
		ids = append(ids, m.running(alice, long).ID)
	}
	// From here all four run: a tick's readings go together.
	msgs0, carried0 := messages.Load(), carried.Load()
	waitFor(t, "five readings of every contract stored, and twenty more carried", func() bool {
		for _, id := range ids {
			if r := m.contract(id).Reading; r == nil || r.Seq < 5 {
				return false
			}
		}
		return carried.Load()-carried0 >= 20
	})
	assert.Zero(t, perContract.Load(), "no reading on its own")
	msgs, rds := messages.Load()-msgs0, carried.Load()-carried0
	assert.Less(t, 3*msgs, 2*rds, "%d messages for %d readings of four contracts running", msgs, rds)
}

// publishRawSigned publishes body as a reading of contract id on its own
// subject, under msgID, with signature sig.
func (s *scripted) publishRawSigned(id, msgID string, body []byte, sig string) {
	s.t.Helper()
	msg := nats.NewMsg(protocol.UsageSubject(s.id, id))
	msg.Data = body
	msg.Header.Set(protocol.SigHeader, sig)
	_, err := s.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(msgID))
	require.NoError(s.t, err)
}

// slowUpdates is a store whose Updates each take delay longer, as a
// database's commit does, once delay is set.
type slowUpdates struct {
	exchange.Store
	delay *atomic.Int64 // nanoseconds
}

func (s slowUpdates) Update(ctx context.Context, id string, change func(c *contract.Contract) ([]currency.Op, error)) (contract.Contract, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.Store.Update(ctx, id, change)
}

// TestReadingsMessageCountedAtOnce: the contracts of a readings message
// are counted at once, not one commit after another: with every Update
// taking 250 ms, eight contracts' final readings in one message settle
// them all in about one Update's time, where one after another they took
// two seconds, long enough for a loaded server to ask for its receipts
// and have every final reading counted twice.
func TestReadingsMessageCountedAtOnce(t *testing.T) {
	const n, delay = 8, 250 * time.Millisecond
	var slow atomic.Int64
	m := newMarketOn(t, slowUpdates{Store: memstore.New(mem.New(mem.Options{})), delay: &slow},
		func(c *exchange.Config) { c.ServerLostAfter = time.Minute })
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", n, accept)
	alice := m.client("alice")
	var finals []contract.Reading
	var ids []string
	for range n {
		c := m.running(alice, terms("alice"))
		ids = append(ids, c.ID)
		finals = append(finals, reading(c.ID, 1, "1", 1, true))
	}
	slow.Store(int64(delay))
	began := time.Now()
	srv.publishReadings(finals, func([]byte) string { return "" })
	waitFor(t, "every contract settled", func() bool {
		for _, id := range ids {
			if m.contract(id).State != contract.StateSettled {
				return false
			}
		}
		return true
	})
	took := time.Since(began)
	assert.Less(t, took, n*delay/2, "%d final readings in one message counted one after another", n)
	m.audit()
}
