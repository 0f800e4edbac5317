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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/signing"
)

// publishReadings publishes one readings message of rs, each signed by
// sig ("" for none), under its message id.
func (s *scripted) publishReadings(rs []contract.Reading, sig func([]byte) string) {
	s.t.Helper()
	var bodies [][]byte
	var sigs []string
	for _, r := range rs {
		b, _ := json.Marshal(r)
		bodies, sigs = append(bodies, b), append(sigs, sig(b))
	}
	data := protocol.AppendReadings(nil, bodies, sigs)
	msg := nats.NewMsg(protocol.ReadingsSubject(s.id))
	msg.Data = data
	_, err := s.js.PublishMsg(context.Background(), msg, jetstream.WithMsgID(protocol.ReadingsMsgID(s.id, data)))
	require.NoError(s.t, err)
}

// TestReadingsMessage: a server's readings message carries several
// contracts' readings, each signed, and each counts as it would on its
// own: stored per contract, a final one settles, a bad signature or
// another server's contract refuses that reading alone, and the message
// again changes nothing.
func TestReadingsMessage(t *testing.T) {
	gpu1Key, gpu2Key, forger := signer(t), signer(t), signer(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + gpu1Key.PublicKey() + "\ngpu2 " + gpu2Key.PublicKey() + "\n"))
	require.NoError(t, err)
	m := newMarket(t, func(c *exchange.Config) { honest(c); c.Verifier = keys })
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	other := m.scriptedServer("gpu2", 1, accept)
	sign := func(s signing.Signer) func([]byte) string {
		return func(b []byte) string {
			sig, err := s.Sign(b)
			require.NoError(t, err)
			return sig
		}
	}
	srv.setSign(sign(gpu1Key))
	other.setSign(sign(gpu2Key))
	alice := m.client("alice")
	on := func(server string) contract.Contract {
		tm := terms("alice")
		tm.Server = server
		return m.running(alice, tm)
	}
	a, b, c := on("gpu1"), on("gpu1"), on("gpu2")

	srv.publishReadings([]contract.Reading{reading(a.ID, 1, "1", 1, false), reading(b.ID, 1, "1", 1, true)}, sign(gpu1Key))
	waitFor(t, "a's reading stored and b settled", func() bool {
		return m.contract(a.ID).Reading != nil && m.contract(b.ID).State == contract.StateSettled
	})
	assert.NotNil(t, m.contract(b.ID).Signed, "the final reading's bytes and signature are on the record")

	// One reading signed by a forger, one of another server's contract:
	// each refused alone; the good one in the same message counts.
	srv.publishReadings([]contract.Reading{reading(a.ID, 2, "2", 2, false)}, sign(forger))
	srv.publishReadings([]contract.Reading{reading(c.ID, 1, "1", 1, true), reading(a.ID, 3, "3", 3, false)}, sign(gpu1Key))
	waitFor(t, "a's third reading stored", func() bool { return m.contract(a.ID).Reading.Seq == 3 })
	assert.Equal(t, contract.StateRunning, m.contract(c.ID).State, "gpu1's word does not settle gpu2's contract")
	other.publishReadings([]contract.Reading{reading(c.ID, 1, "1", 1, false)}, func([]byte) string { return "" })
	time.Sleep(300 * time.Millisecond)
	assert.Nil(t, m.contract(c.ID).Reading, "unsigned, where signatures are required")
}

// TestAgentReadingsPerServer: an agent running several contracts sends a
// readings message a reading interval, not a message per contract; and
// the contracts' readings are stored all the same.
func TestAgentReadingsPerServer(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.postedAgent("gpu1", 4, "0.001")
	waitFor(t, "gpu1's hello", func() bool { return m.ex.LiveServers() == 1 })
	var perContract, perServer atomic.Int64
	nc := natstest.Connect(t, m.ns, "")
	_, err := nc.Subscribe(protocol.ServerSubject("gpu1", ">"), func(msg *nats.Msg) {
		switch {
		case strings.HasPrefix(msg.Subject, protocol.ServerSubject("gpu1", protocol.VerbUsage)+"."):
			perContract.Add(1)
		case msg.Subject == protocol.ReadingsSubject("gpu1"):
			perServer.Add(1)
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
	began := perServer.Load()
	time.Sleep(time.Second) // 20 reading intervals of the test exchange's 50 ms
	got := perServer.Load() - began
	assert.Zero(t, perContract.Load(), "no reading on its own")
	assert.Greater(t, got, int64(5))
	assert.Less(t, got, int64(40), "about one message an interval for all four contracts, not four")
	for _, id := range ids {
		assert.NotNil(t, m.contract(id).Reading, "%s's readings stored", id)
	}
}
