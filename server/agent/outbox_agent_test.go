package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/outbox"
)

// stopNATS stops the NATS server and returns its port, for startNATS.
func (x *exchange) stopNATS() int {
	x.t.Helper()
	port := x.ns.Addr().(*net.TCPAddr).Port
	x.ns.Shutdown()
	x.ns.WaitForShutdown()
	return port
}

// startNATS starts NATS again on port with the same JetStream directory.
func (x *exchange) startNATS(port int) {
	x.t.Helper()
	x.ns = startNATS(x.t, port, x.store)
	require.Eventually(x.t, x.nc.IsConnected, 5*time.Second, 10*time.Millisecond, "the exchange did not reconnect")
}

// all returns every reading of a contract on the usage stream.
func (x *exchange) all(id, contractID string) []contract.Reading {
	x.t.Helper()
	cons, err := x.js.OrderedConsumer(context.Background(), protocol.UsageStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{protocol.UsageSubject(id, contractID)}})
	require.NoError(x.t, err)
	var out []contract.Reading
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return out
		}
		var rd contract.Reading
		require.NoError(x.t, json.Unmarshal(m.Data(), &rd))
		require.Equal(x.t, protocol.MsgID(id, rd), m.Headers().Get(jetstream.MsgIDHeader))
		out = append(out, rd)
	}
}

// syncBuffer is a log the test reads while the agent writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestAgentOutbox loses NATS while a job ends: the final reading waits in
// the outbox through a restart of the agent, and the next agent sends it
// once NATS is back. A copy sent again later is dropped by its message id.
func TestAgentOutbox(t *testing.T) {
	x := newExchange(t, setup{})
	dir := t.TempDir()
	var logs syncBuffer
	cfg := agent.Config{OutboxDir: dir, ShutdownTimeout: 300 * time.Millisecond,
		NATSOptions: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)},
		Logger:      slog.New(slog.NewTextHandler(&logs, nil))}
	ag := x.startAgent("gpu1", cfg)
	rs := x.readings("gpu1", "c1")
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 400*time.Millisecond))
	require.NoError(t, err)
	first, _ := rs.next()
	require.Equal(t, uint64(1), first.Seq)

	port := x.stopNATS()
	require.Eventually(t, func() bool { return bytes.Contains([]byte(logs.String()), []byte("final reading not acknowledged")) },
		5*time.Second, 20*time.Millisecond, "the job did not end, or its final reading went out")
	require.NoError(t, ag.shutdown(t))
	require.Contains(t, logs.String(), "outbox keeps it for the next run")

	// The agent restarts before NATS does.
	ag = x.runAgent("gpu1", cfg)
	time.Sleep(3 * every)
	x.startNATS(port)
	var final contract.Reading
	require.Eventually(t, func() bool {
		rds := x.all("gpu1", "c1")
		if len(rds) == 0 || !rds[len(rds)-1].Final {
			return false
		}
		final = rds[len(rds)-1]
		return true
	}, 10*time.Second, 50*time.Millisecond, "no final reading")
	assert.Equal(t, contract.ReasonCompleted, final.Reason)
	require.NotNil(t, final.ExitCode)
	assert.Equal(t, 0, *final.ExitCode)
	assert.Greater(t, final.Seq, first.Seq)
	assert.True(t, final.U.Equal(dectest.D("0.4")), "u = %s", final.U)
	require.NoError(t, ag.shutdown(t))
	finals := func() int {
		n := 0
		for _, rd := range x.all("gpu1", "c1") {
			if rd.Final {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, finals())

	ob, err := outbox.Open(outbox.Config{Dir: dir})
	require.NoError(t, err)
	assert.Zero(t, ob.Len(), "the acknowledgement was noted")
	t.Run("sent twice", func(t *testing.T) {
		// As if the acknowledgement had been lost: the next agent sends
		// the final reading again, and the stream drops the copy.
		require.NoError(t, ob.Append(final))
		require.NoError(t, ob.Close())
		x.runAgent("gpu1", cfg)
		require.Eventually(t, func() bool {
			return bytes.Count([]byte(logs.String()), []byte("final reading sent from the outbox")) == 2
		}, 5*time.Second, 20*time.Millisecond)
		assert.Equal(t, 1, finals())
	})
}
