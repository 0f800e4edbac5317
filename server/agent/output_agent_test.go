package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
)

// output reads a contract's log from the output stream as a client's
// reader would, each chunk placed at its offset, and its end, if it came.
func (x *exchange) output(id, contractID string) (stdout string, end *protocol.OutputEnd) {
	x.t.Helper()
	cons, err := x.js.OrderedConsumer(context.Background(), protocol.OutputStreamOf(id),
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{protocol.OutputSubject(id, contractID, protocol.PartLog)}})
	require.NoError(x.t, err)
	var b []byte
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		if err != nil {
			return string(b), end
		}
		// A running job's output never ends: read what was there.
		meta, err := m.Metadata()
		require.NoError(x.t, err)
		last := meta.NumPending == 0
		switch m.Headers().Get(protocol.StreamHeader) {
		case protocol.StreamEnd:
			end = &protocol.OutputEnd{}
			require.NoError(x.t, json.Unmarshal(m.Data(), end))
		case protocol.StreamStdout:
			off, err := strconv.Atoi(m.Headers().Get(protocol.OffsetHeader))
			require.NoError(x.t, err)
			require.LessOrEqual(x.t, off, len(b), "a gap in stdout")
			b = append(b[:off], m.Data()...)
		}
		if last {
			return string(b), end
		}
	}
}

// TestAgentOutputOutlivesOutage: a job's output written while NATS is
// down, and while the agent is stopped, waits on the server's disk; the
// next agent sends it once NATS is back, whole, in order and once.
func TestAgentOutputOutlivesOutage(t *testing.T) {
	x := newExchange(t, setup{})
	_, err := x.js.CreateStream(context.Background(), jetstream.StreamConfig{Name: protocol.OutputStreamOf("gpu1"),
		Subjects: []string{protocol.OutputSubjectsOf("gpu1")}, Duplicates: 10 * time.Minute, AllowDirect: true})
	require.NoError(t, err)
	out, outbox := t.TempDir(), t.TempDir()
	config := func() agent.Config {
		pr, err := process.New(process.Config{Allowed: []string{os.Args[0]}, AllowEnv: []string{helperEnv}, OutputDir: out,
			Grace: 5 * time.Second, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		t.Cleanup(pr.Close)
		return agent.Config{Runner: pr, OutboxDir: outbox, Output: &spool.Config{Dir: out, Every: 20 * time.Millisecond},
			ShutdownTimeout: 300 * time.Millisecond, NATSOptions: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)}}
	}
	first := x.startAgent("gpu1", config())
	tm := terms(1, time.Hour, "0.001", "3.60", "1", time.Hour)
	tm.Job = &contract.JobSpec{Command: os.Args[0], Env: map[string]string{helperEnv: "ticks"}}
	_, err = x.start("gpu1", "o1", "c1", tm)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		got, _ := x.output("gpu1", "c1")
		return strings.Contains(got, "tick 2\n")
	}, 5*time.Second, 50*time.Millisecond, "no live output")

	port := x.stopNATS()
	time.Sleep(200 * time.Millisecond) // ticks written while NATS is down
	require.NoError(t, first.shutdown(t))
	exit, err := os.ReadFile(filepath.Join(out, "c1", spool.ExitFile))
	require.NoError(t, err)
	assert.Equal(t, "3\n", string(exit), "the job ended on the agent's stop, its output whole on disk")

	x.runAgent("gpu1", config()) // before NATS is back
	time.Sleep(100 * time.Millisecond)
	x.startNATS(port)
	var got string
	var end *protocol.OutputEnd
	require.Eventually(t, func() bool {
		got, end = x.output("gpu1", "c1")
		return end != nil
	}, 10*time.Second, 50*time.Millisecond, "the output's end never came")
	disk, err := os.ReadFile(filepath.Join(out, "c1", spool.StdoutFile))
	require.NoError(t, err)
	assert.Equal(t, string(disk), got, "the stream holds what the job wrote, whole")
	assert.True(t, strings.HasSuffix(got, "bye\n"), "what the job wrote as it stopped came too: %q", got)
	n := strings.Count(got, "tick ")
	assert.Greater(t, n, 10, "ticks written during the outage came")
	assert.Equal(t, int64(len(got)), end.Stdout)
}
