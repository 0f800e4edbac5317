package natsvc_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
)

// finals records the final readings an agent made, by contract: what
// its server says each job ran.
type finals struct {
	mu sync.Mutex
	by map[string]contract.Reading
}

func (f *finals) record(rd contract.Reading) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = map[string]contract.Reading{}
	}
	f.by[rd.Contract] = rd
}

func (f *finals) of(id string) (contract.Reading, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rd, ok := f.by[id]
	return rd, ok
}

// paidInFull requires every contract of ids settled as completed at the
// charge of its server's own final reading.
func (m *market) paidInFull(f *finals, ids []string) {
	m.t.Helper()
	t := m.t.(*testing.T)
	for _, id := range ids {
		c := m.settled(id, 10*time.Second)
		rd, ok := f.of(id)
		require.True(t, ok, "no final reading of %s", id)
		require.NotNil(t, c.Reading, "%s settled on no reading", id)
		assert.Equal(t, rd.Seq, c.Reading.Seq, "%s settled (%s) on reading %d, its server's final is %d", id, c.Reason, c.Reading.Seq, rd.Seq)
		chargedFor(t, c, contract.ReasonCompleted, rd.Usage())
	}
	m.noOpenHold()
}

// consumerCaughtUp says whether the exchange's usage consumer has
// acknowledged everything the usage stream holds.
func consumerCaughtUp(t testing.TB, js jetstream.JetStream) bool {
	t.Helper()
	ctx := context.Background()
	stream, err := js.Stream(ctx, protocol.UsageStream)
	require.NoError(t, err)
	cons, err := stream.Consumer(ctx, "exchange")
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	return info.NumAckPending == 0 && info.NumPending == 0 && info.AckFloor.Stream == info.Delivered.Stream
}

// TestStaleReadingAcknowledged: a readings message in which one reading
// changes nothing (a copy of one counted, as an agent with an outbox
// sends a reading both alone and in its readings message) is
// acknowledged, the others in it counted. Asked for again instead, it
// came back every second for ever: each time a database transaction and
// a token of its server's reading rate, and it counted towards the
// consumer's unacknowledged limit, past which no reading is delivered.
func TestStaleReadingAcknowledged(t *testing.T) {
	m := newMarket(t, func(c *exchange.Config) { c.ServerLostAfter = time.Minute })
	m.wallet("alice", "100")
	srv := m.scriptedServer("gpu1", 2, accept)
	alice := m.client("alice")
	a, b := m.running(alice, terms("alice")), m.running(alice, terms("alice"))
	srv.publish(reading(a.ID, 2, "2", 2, false))
	waitFor(t, "a's reading stored", func() bool { return m.contract(a.ID).Reading != nil })

	srv.publishReadings([]contract.Reading{reading(a.ID, 1, "1", 1, false), reading(b.ID, 1, "1", 1, false)}, func([]byte) string { return "" })
	waitFor(t, "b's reading stored", func() bool { return m.contract(b.ID).Reading != nil })
	waitFor(t, "the readings message acknowledged", func() bool { return consumerCaughtUp(t, srv.js) })
	assert.Equal(t, uint64(2), m.contract(a.ID).Reading.Seq, "the stale reading changed a's")
}

// TestFinalReadingsOverTheRate: a server whose readings go over its
// rate has them refused, final ones too; its final readings are still
// its own until the exchange's receipt, so the agent asks about them, the
// exchange counts them then, and every contract is paid what its server's
// final reading says. Refused for good, a final reading left its
// contract to be settled as lost on an earlier reading.
func TestFinalReadingsOverTheRate(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{Readings: 2, ReadingBurst: 2})
	m.wallet("alice", "100")
	var f finals
	m.agentTuned("gpu1", 4, func(c *agent.Config) { c.OnFinal = f.record })
	alice := m.client("alice")
	short := terms("alice")
	short.Job.Profile.Duration = 400 * time.Millisecond
	var ids []string
	for range 4 {
		ids = append(ids, m.running(alice, short).ID)
	}
	m.paidInFull(&f, ids)
	assert.Positive(t, refused(t, reg, "readings"), "no reading went over the rate: the test tested nothing")
}

// TestFinalReadingLostFromTheStream: the usage stream loses readings it
// acknowledged (a power loss before its write reached the disk; Debian's
// nats-server 2.9 as it shuts down), the contract's final reading among
// them, while no exchange runs. The agent has no receipt for it, lists
// the contract as settling in its heartbeats (so that no sweep takes its
// silence for a lost server's), and asks the exchange about it once one
// answers: the contract is paid in full.
func TestFinalReadingLostFromTheStream(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	var f finals
	m.agentTuned("gpu1", 1, func(c *agent.Config) { c.OnFinal = f.record })
	alice := m.client("alice")
	short := terms("alice")
	short.Job.Profile.Duration = 500 * time.Millisecond
	c := m.running(alice, short)

	nc := natstest.Connect(t, m.ns, "")
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	finalSent := make(chan struct{})
	var once sync.Once
	_, err = nc.Subscribe(protocol.ReadingsSubject("gpu1"), func(msg *nats.Msg) {
		rs, err := protocol.DecodeReadings(msg.Data)
		if err != nil {
			return
		}
		for _, r := range rs.Readings {
			if rd, err := protocol.DecodeReading(r.Reading); err == nil && rd.Final {
				once.Do(func() { close(finalSent) })
			}
		}
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	m.exStop()
	select {
	case <-finalSent:
	case <-time.After(5 * time.Second):
		t.Fatal("no final reading published")
	}
	stream, err := js.Stream(context.Background(), protocol.UsageStream)
	require.NoError(t, err)
	waitFor(t, "the final reading in the stream", func() bool {
		msg, err := stream.GetLastMsgForSubject(context.Background(), protocol.ReadingsSubject("gpu1"))
		if err != nil {
			return false
		}
		rs, err := protocol.DecodeReadings(msg.Data)
		if err != nil {
			return false
		}
		for _, r := range rs.Readings {
			if rd, err := protocol.DecodeReading(r.Reading); err == nil && rd.Final {
				return true
			}
		}
		return false
	})
	require.NoError(t, stream.Purge(context.Background()))
	time.Sleep(3 * time.Second) // longer than server_lost_after: the sweep must wait for it
	m.startExchange()
	m.paidInFull(&f, []string{c.ID})
}

// TestReadingsWithoutTheStream: the usage stream takes no more readings
// (sealed here, as a NATS node cut off from the stream's quorum takes
// none), while the exchange still answers. The agent sends its readings
// to the exchange directly, with its questions for receipts: the
// contract's readings keep reaching the store as its job runs, so that
// its client sees them and a sweep has the latest to settle on, and its
// final reading settles it in full.
func TestReadingsWithoutTheStream(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	var f finals
	m.agentTuned("gpu1", 1, func(c *agent.Config) { c.OnFinal = f.record })
	alice := m.client("alice")
	long := terms("alice")
	long.Job.Profile.Duration = 6 * time.Second
	c := m.running(alice, long)
	waitFor(t, "a reading through the stream", func() bool { return m.contract(c.ID).Reading != nil })

	js, err := jetstream.New(natstest.Connect(t, m.ns, ""))
	require.NoError(t, err)
	ctx := context.Background()
	stream, err := js.Stream(ctx, protocol.UsageStream)
	require.NoError(t, err)
	cfg := stream.CachedInfo().Config
	cfg.Sealed = true
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	sealedAt := m.contract(c.ID).Reading.Seq
	_, err = js.Publish(ctx, protocol.ReadingsSubject("gpu1"), []byte("{}"))
	require.Error(t, err, "the stream took a reading after it was sealed")

	waitFor(t, "readings while the job runs, after the stream took no more", func() bool {
		r := m.contract(c.ID).Reading
		return r != nil && !r.Final && r.Seq > sealedAt+5
	})
	m.paidInFull(&f, []string{c.ID})
}
