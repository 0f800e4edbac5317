package natsvc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestBacklogHolds: what the sweep relies on of the usage stream, on the
// module's NATS server and on Debian's 2.9 that operators run. A reading
// JetStream acknowledged to its server is held for that server until an
// instance of the exchange acknowledges it (stored) or terminates it
// (refused), including while an instance has taken it and said nothing
// (paused); a reading asked for again later (nak) is still held; another
// server's readings are not its. What the exchange's consumer has
// acknowledged is not held though the stream keeps it: for another
// consumer here, as nats-server 2.9 keeps some after a restart. Nor is
// a reading stored more than twice ServerLostAfter ago that is still not
// acknowledged: it is stuck (nats-server 2.9 redelivers some for ever
// after a restart, never recording their acknowledgement).
func TestBacklogHolds(t *testing.T) {
	t.Run("module", func(t *testing.T) {
		ns := natstest.Start(t)
		checkBacklog(t, natstest.Connect(t, ns, ""))
	})
	t.Run("debian", func(t *testing.T) {
		bin := natstest.DebianNATS(t)
		dir := t.TempDir()
		port := natstest.FreePort(t)
		conf := filepath.Join(dir, "nats-server.conf")
		require.NoError(t, os.WriteFile(conf, fmt.Appendf(nil, "listen: 127.0.0.1:%d\njetstream { store_dir: %q }\n", port, dir), 0o600))
		natstest.RunBinary(t, bin, "-c", conf)
		nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port))
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		checkBacklog(t, nc)
	})
}

func checkBacklog(t *testing.T, nc *nats.Conn) {
	ctx := context.Background()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	cfg := Config{Conn: nc}
	require.NoError(t, cfg.defaults())
	stream, err := js.CreateOrUpdateStream(ctx, usageStream(cfg))
	require.NoError(t, err)
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "exchange", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute})
	require.NoError(t, err)
	const lostAfter = 10 * time.Second
	b := (*backlog)(&Service{usage: stream, usageCons: cons, cfg: exchange.Config{Now: time.Now, ServerLostAfter: lostAfter}})
	b.marks.keep = stuckAfter*lostAfter + time.Second
	holds := func(server string) bool {
		t.Helper()
		held, err := b.Holds(ctx, server)
		require.NoError(t, err)
		return held
	}
	// gone waits for server's readings to leave the stream: removing an
	// acknowledged message follows the acknowledgement.
	gone := func(server, what string) {
		t.Helper()
		assert.Eventually(t, func() bool { return !holds(server) }, 5*time.Second, 10*time.Millisecond, what)
	}
	take := func() jetstream.Msg {
		t.Helper()
		batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		m, ok := <-batch.Messages()
		require.True(t, ok, "a reading to take")
		return m
	}

	assert.False(t, holds("gpu1"), "an empty stream")
	_, err = js.Publish(ctx, protocol.ReadingsSubject("gpu1"), []byte("readings"))
	require.NoError(t, err)
	assert.True(t, holds("gpu1"), "acknowledged to its server, not yet taken")
	assert.False(t, holds("gpu2"), "another server's")
	m := take()
	assert.True(t, holds("gpu1"), "taken by an instance that has said nothing")
	require.NoError(t, m.Nak())
	m = take()
	assert.True(t, holds("gpu1"), "asked for again, taken again")
	require.NoError(t, m.DoubleAck(ctx))
	gone("gpu1", "stored and acknowledged")

	_, err = js.Publish(ctx, protocol.UsageSubject("gpu2", "c-1"), []byte("reading"))
	require.NoError(t, err)
	assert.True(t, holds("gpu2"), "a reading on its own")
	assert.False(t, holds("gpu1"))
	require.NoError(t, take().Term())
	gone("gpu2", "refused for good")

	// An operator's own consumer keeps every reading in the stream until
	// it acknowledges it too (interest retention).
	_, err = stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "watcher", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = js.Publish(ctx, protocol.ReadingsSubject("gpu1"), []byte("readings"))
	require.NoError(t, err)
	assert.True(t, holds("gpu1"))
	require.NoError(t, take().DoubleAck(ctx))
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.Positive(t, info.State.Msgs, "the watcher's reading stays in the stream")
	gone("gpu1", "acknowledged by the exchange, kept for the watcher")

	// A reading taken and never acknowledged: held while it is recent,
	// stuck once the stream's marks say it was stored more than twice
	// ServerLostAfter ago.
	_, err = js.Publish(ctx, protocol.ReadingsSubject("gpu3"), []byte("readings"))
	require.NoError(t, err)
	stuck := take()
	assert.True(t, holds("gpu3"))
	info, err = stream.Info(ctx)
	require.NoError(t, err)
	b.marks.add(time.Now().Add(-stuckAfter*lostAfter-time.Second), info.State.LastSeq-1)
	assert.True(t, holds("gpu3"), "stored after the oldest mark")
	b.marks.add(time.Now().Add(-stuckAfter*lostAfter), info.State.LastSeq)
	assert.False(t, holds("gpu3"), "stored before the mark of twice ServerLostAfter ago: stuck")
	require.NoError(t, stuck.Ack())
}

// TestMarks: the stream's last sequence at a time is the latest mark at
// or before it; marks older than keep go, but for the one that answers
// for keep ago.
func TestMarks(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m := marks{keep: 10 * time.Second}
	assert.Zero(t, m.at(t0), "no mark")
	for i := range 30 {
		m.add(t0.Add(time.Duration(i)*time.Second), uint64(100+i))
	}
	now := t0.Add(29 * time.Second)
	assert.Equal(t, uint64(119), m.at(now.Add(-10*time.Second)))
	assert.Equal(t, uint64(119), m.at(now.Add(-9500*time.Millisecond)), "the latest mark at or before")
	assert.Len(t, m.all, 12, "keep's worth, and the one before it that answers for up to a mark past keep")
	assert.Equal(t, uint64(118), m.at(now.Add(-10500*time.Millisecond)))
	assert.Zero(t, m.at(now.Add(-12*time.Second)), "older than any kept: 0, the floor decides")

	// The stream made anew: its sequence starts again, and the old
	// marks would pass over its readings.
	m.add(now.Add(time.Second), 3)
	assert.Zero(t, m.at(now), "no mark of the new stream that old")
	assert.Equal(t, uint64(3), m.at(now.Add(time.Second)))
}
