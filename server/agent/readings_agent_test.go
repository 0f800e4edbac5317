package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/signing"
)

// readingsMsg is one readings message as the stream holds it: its
// readings decoded, each with the bytes and signature it came with.
type readingsMsg struct {
	msgID string
	rds   []contract.Reading
	raw   []protocol.SignedReading
}

// readingsOf reads every readings message of server id on the usage
// stream so far.
func (x *exchange) readingsOf(id string) []readingsMsg {
	x.t.Helper()
	cons, err := x.js.OrderedConsumer(context.Background(), protocol.UsageStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{protocol.ReadingsSubject(id)}})
	require.NoError(x.t, err)
	var out []readingsMsg
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return out
		}
		rs, err := protocol.DecodeReadings(m.Data())
		require.NoError(x.t, err)
		msg := readingsMsg{msgID: m.Headers().Get(jetstream.MsgIDHeader), raw: rs.Readings}
		for _, r := range rs.Readings {
			rd, err := protocol.DecodeReading(r.Reading)
			require.NoError(x.t, err)
			msg.rds = append(msg.rds, rd)
		}
		out = append(out, msg)
	}
}

// finalsIn counts the final readings in msgs.
func finalsIn(msgs []readingsMsg) int {
	n := 0
	for _, m := range msgs {
		for _, rd := range m.rds {
			if rd.Final {
				n++
			}
		}
	}
	return n
}

// newSigner makes a server's signing key.
func newSigner(t *testing.T) signing.Signer {
	t.Helper()
	seed, _, err := signing.NewKey()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "key.nk")
	require.NoError(t, os.WriteFile(path, seed, 0o600))
	s, err := signing.LoadSigner(path)
	require.NoError(t, err)
	return s
}

// TestAgentBatchesReadings: where the exchange's hello reply says its
// stream takes readings messages, an agent running three contracts sends
// their readings together, a message per tick rather than one per
// contract, final readings included: each reading in a message signed on
// its own bytes by the server's key, every contract's sequence numbers
// whole and in order within and across the messages (a job that ends
// just after a tick has its last reading and its final one in one
// message), and nothing on the contracts' own subjects. The message
// id names the server and the message's digest, so that a retry is
// stored once and no other server can spend it.
func TestAgentBatchesReadings(t *testing.T) {
	x := newExchange(t, setup{readings: true})
	key := newSigner(t)
	keys, err := signing.ReadKeys(strings.NewReader("gpu1 " + key.PublicKey() + "\n"))
	require.NoError(t, err)
	x.startAgent("gpu1", agent.Config{Signer: key})
	ids := []string{"c1", "c2", "c3"}
	for i, id := range ids {
		_, err := x.start("gpu1", "o"+id, id, terms(1, 10*time.Second, "0.001", "0.01", "1", time.Second+time.Duration(i)*100*time.Millisecond))
		require.NoError(t, err)
	}

	var msgs []readingsMsg
	require.Eventually(t, func() bool { msgs = x.readingsOf("gpu1"); return finalsIn(msgs) == len(ids) },
		10*time.Second, 100*time.Millisecond, "every contract's final reading, in readings messages")

	for _, id := range ids {
		assert.Empty(t, x.all("gpu1", id), "%s: a reading on its own subject", id)
	}
	seqs := map[string][]uint64{}
	total, together := 0, 0
	for _, m := range msgs {
		assert.True(t, strings.HasPrefix(m.msgID, "gpu1:readings:"), "message id %q", m.msgID)
		seen := map[string]bool{}
		for i, rd := range m.rds {
			require.NoError(t, keys.Verify("gpu1", m.raw[i].Reading, m.raw[i].Sig), "reading %d of %s: its own signature", rd.Seq, rd.Contract)
			seen[rd.Contract] = true
			seqs[rd.Contract] = append(seqs[rd.Contract], rd.Seq)
			total++
		}
		if len(seen) == len(ids) {
			together++
		}
	}
	for _, id := range ids {
		s := seqs[id]
		require.NotEmpty(t, s, id)
		for i, seq := range s {
			assert.Equal(t, uint64(i+1), seq, "%s's readings: %v", id, s)
		}
	}
	assert.Positive(t, together, "no message carried all three contracts' readings: %d messages for %d readings", len(msgs), total)
	assert.Less(t, len(msgs), total, "a message per reading")
}

// TestAgentReadingsAloneToAnOldExchange: an exchange that does not say
// its stream takes readings messages (one older than them) gets each
// reading on its contract's subject, as before.
func TestAgentReadingsAloneToAnOldExchange(t *testing.T) {
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{})
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 300*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(finalsOf(x.all("gpu1", "c1"))) == 1 }, 5*time.Second, 50*time.Millisecond, "the final reading on its own")
	assert.Empty(t, x.readingsOf("gpu1"))
}

// TestAgentReadingsOneMessageAnInterval: contracts started at different
// moments of a reading interval fall due at different ticks, yet their
// readings go out together, a message an interval for the server rather
// than one per contract (issue 34: the usage stream's messages grow with
// servers, not contracts). Only final readings go out at once.
func TestAgentReadingsOneMessageAnInterval(t *testing.T) {
	x := newExchange(t, setup{readings: true, readingEvery: time.Second})
	x.startAgent("gpu1", agent.Config{})
	ids := []string{"c1", "c2", "c3"}
	for _, id := range ids {
		_, err := x.start("gpu1", "o"+id, id, terms(1, 10*time.Second, "0.001", "0.01", "1", 3500*time.Millisecond))
		require.NoError(t, err)
		time.Sleep(300 * time.Millisecond) // each contract's readings at another phase of the interval
	}
	var msgs []readingsMsg
	require.Eventually(t, func() bool { msgs = x.readingsOf("gpu1"); return finalsIn(msgs) == len(ids) },
		15*time.Second, 100*time.Millisecond, "every contract's final reading, in readings messages")

	periodic := 0                   // messages of readings that are not final
	perContract := map[string]int{} // each contract's readings that are not final
	for _, m := range msgs {
		final := false
		for _, rd := range m.rds {
			if rd.Final {
				final = true
			} else {
				perContract[rd.Contract]++
			}
		}
		if !final {
			periodic++
		}
	}
	most := 0
	for _, n := range perContract {
		most = max(most, n)
	}
	require.Positive(t, most, "no reading before the final ones")
	assert.LessOrEqual(t, periodic, most+1, "%d messages of periodic readings for %v: one a contract, not one an interval", periodic, perContract)
}

// TestAgentReadingsAloneWhenNothingTakesThem: the hello reply said the
// stream takes readings messages, and then nothing takes them (the
// exchange was rolled back to one older than them and made its stream
// again; a NATS cluster electing the stream's leader looks the same for
// seconds). A job's readings, its final one among them, go on its
// contract's own subject then, and are not lost.
func TestAgentReadingsAloneWhenNothingTakesThem(t *testing.T) {
	x := newExchange(t, setup{readings: true})
	x.startAgent("gpu1", agent.Config{})
	_, err := x.js.UpdateStream(context.Background(), jetstream.StreamConfig{Name: protocol.UsageStream, Subjects: []string{protocol.UsageSubjects}})
	require.NoError(t, err)
	_, err = x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 1500*time.Millisecond))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(finalsOf(x.all("gpu1", "c1"))) == 1 }, 10*time.Second, 50*time.Millisecond,
		"the final reading on its own, once readings messages found nothing to take them")
}

func finalsOf(rds []contract.Reading) []contract.Reading {
	var out []contract.Reading
	for _, rd := range rds {
		if rd.Final {
			out = append(out, rd)
		}
	}
	return out
}
