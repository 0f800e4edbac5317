package natsvc_test

// Servers that attack other servers' clients through the output stream:
// by flooding it, by spending the chunk ids another server will use, and
// by sending a client what it never declared.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/metrictest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/spool"
)

// outputLost is the code a client's reader gives output it knows it
// lost (bourse.EOutputLost).
const outputLost = bourse.Code("output_lost")

// withOutputBytes restarts the market's exchange with an output stream
// bound of max bytes (natsvc.OutputLimits.MaxBytes).
func (m *market) withOutputBytes(max int64) {
	m.t.Helper()
	m.exStop()
	m.cfg.Output.MaxBytes = max
	m.startExchange()
}

// processAgent runs a real agent whose process runner runs /bin/echo,
// with its jobs' output sent through a spool, until the test ends.
func (m *market) processAgent(id string) {
	m.t.Helper()
	out := m.t.TempDir()
	pr, err := process.New(process.Config{Allowed: []string{"/bin/echo"}, OutputDir: out, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(m.t, err)
	m.t.Cleanup(pr.Close)
	a, err := agent.New(agent.Config{Conn: natstest.Connect(m.t, m.ns, protocol.InboxPrefix(id)),
		ID: id, Currency: currency.Currency{Code: cred, Scale: 2}, GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}},
		Runner: pr, Output: &spool.Config{Dir: out, LogCap: pr.OutputCap(), Every: 20 * time.Millisecond}, Logger: slog.New(slog.DiscardHandler),
		ReadingEvery: 50 * time.Millisecond, Heartbeat: 50 * time.Millisecond})
	require.NoError(m.t, err)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = a.Run(ctx) })
	m.t.Cleanup(func() { stop(); wg.Wait() })
}

// echo is alice's offer of a job that prints words.
func echo(words ...string) contract.Terms {
	return contract.Terms{Client: "alice", Currency: cred, GPUs: 1, TimeLimit: time.Minute, Prepayment: dectest.D("0.60"),
		P: contract.Flat(dectest.D("0.01")), Job: &contract.JobSpec{Command: "/bin/echo", Args: words}}
}

// publishOutput puts a chunk on the server's own output subject of a
// contract, under msgID, as a server may, whatever it holds.
func (s *scripted) publishOutput(contractID, part, stream string, offset int64, data []byte, msgID string) {
	s.t.Helper()
	msg := nats.NewMsg(protocol.OutputSubject(s.id, contractID, part))
	msg.Data = data
	msg.Header.Set(protocol.StreamHeader, stream)
	if stream != protocol.StreamEnd {
		msg.Header.Set(protocol.OffsetHeader, strconv.FormatInt(offset, 10))
	}
	var opts []jetstream.PublishOpt
	if msgID != "" {
		opts = append(opts, jetstream.WithMsgID(msgID))
	}
	_, err := s.js.PublishMsg(context.Background(), msg, opts...)
	require.NoError(s.t, err)
}

// flood publishes n bytes of output under made-up contract ids on
// server's own subjects, in chunks of the most a chunk may hold.
func (s *scripted) flood(n int) {
	s.t.Helper()
	chunk := bytes.Repeat([]byte("x"), protocol.MaxOutputChunk)
	for i := 0; i*len(chunk) < n; i++ {
		s.publishOutput(fmt.Sprintf("made-up-%d", i), protocol.PartLog, protocol.StreamStdout, 0, chunk, "")
	}
}

// readAll reads alice's logs and results of contract id as they stand,
// without waiting.
func readAll(t *testing.T, alice *bidder.Client, id string) (stdout string, logEnd, resultsEnd *protocol.OutputEnd, logErr, resultsErr error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	logEnd, logErr = alice.FollowLogs(ctx, id, bidder.Follow{}, &out, &errOut)
	f, err := os.Create(filepath.Join(t.TempDir(), "results.tar"))
	require.NoError(t, err)
	defer f.Close()
	resultsEnd, resultsErr = alice.Results(ctx, id, bidder.Follow{}, f)
	return out.String(), logEnd, resultsEnd, logErr, resultsErr
}

// whole waits for all of contract id's output to come, and checks it.
func whole(t *testing.T, alice *bidder.Client, id, stdout string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	end, err := alice.FollowLogs(ctx, id, bidder.Follow{Wait: true, Every: 20 * time.Millisecond, Lost: 3 * time.Second}, &out, &errOut)
	require.NoError(t, err, "alice's logs")
	require.NotNil(t, end)
	assert.Equal(t, stdout, out.String())
	f, err := os.Create(filepath.Join(t.TempDir(), "results.tar"))
	require.NoError(t, err)
	defer f.Close()
	end, err = alice.Results(ctx, id, bidder.Follow{Wait: true, Every: 20 * time.Millisecond, Lost: 3 * time.Second}, f)
	require.NoError(t, err, "alice's results")
	require.NotNil(t, end)
}

// TestOutputFlood: mallory publishes several times the output stream's
// bound under made-up contract ids on its own subjects. alice's output,
// from another server, is still there whole: one server's flood evicts
// only its own output (each server's quota).
func TestOutputFlood(t *testing.T) {
	m := newMarket(t, nil)
	m.withOutputBytes(1 << 20)
	m.wallet("alice", "100")
	m.processAgent("gpu1")
	// mallory says it runs programs, so it has an output stream to flood.
	mallory := m.scriptedRunning("mallory", 1, &protocol.Runs{Runner: protocol.RunnerProcess, Programs: []string{"/bin/true"}},
		func(protocol.ServerOffer) protocol.Decision { return protocol.Decision{Reason: "busy"} })
	alice := m.client("alice")
	id := offerUntilAccepted(t, alice, echo("alice's", "log"))
	whole(t, alice, id, "alice's log\n")

	mallory.flood(4 << 20)

	stdout, logEnd, resultsEnd, logErr, resultsErr := readAll(t, alice, id)
	require.NoError(t, logErr)
	require.NoError(t, resultsErr)
	assert.Equal(t, "alice's log\n", stdout, "mallory's flood wiped alice's log")
	assert.NotNil(t, logEnd, "the end of alice's log is gone")
	assert.NotNil(t, resultsEnd, "alice's results are gone")
}

// TestOutputLostIsTold: the contract's own server overflows its quota
// after alice's job, and her output goes with its oldest. alice's reader
// says so, with the code output_lost, rather than print nothing and
// succeed.
func TestOutputLostIsTold(t *testing.T) {
	m := newMarket(t, nil)
	m.withOutputBytes(1 << 20)
	m.wallet("alice", "100")
	m.processAgent("gpu1")
	alice := m.client("alice")
	id := offerUntilAccepted(t, alice, echo("alice's", "log"))
	whole(t, alice, id, "alice's log\n")
	m.settled(id, 10*time.Second)

	// The server's own subjects, as the server would publish on them.
	gpu1 := &scripted{t: t, id: "gpu1", nc: natstest.Connect(t, m.ns, "")}
	var err error
	gpu1.js, err = jetstream.New(gpu1.nc)
	require.NoError(t, err)
	gpu1.flood(4 << 20)

	stdout, _, _, logErr, resultsErr := readAll(t, alice, id)
	assert.Empty(t, stdout)
	assert.Equal(t, outputLost, bourse.ErrorCode(logErr), "alice was not told her log was lost: %v", logErr)
	assert.Equal(t, outputLost, bourse.ErrorCode(resultsErr), "alice was not told her results were lost: %v", resultsErr)
}

// TestOutputForeignIDs: mallory, asked in the negotiation, knows the
// contract's id (the offer id no longer tells it, but anyone who knows
// the client and its request id can work it out) and publishes on its
// own subjects the chunks gpu1's job will send, under their ids (its
// stdout, which the command says, the empty results archive and both
// ends). JetStream de-duplicates ids per stream: gpu1's real chunks must
// not be dropped as duplicates of mallory's, and alice gets her output.
func TestOutputForeignIDs(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.processAgent("gpu1")
	var requestID atomic.Pointer[string]
	var mallory *scripted
	mallory = m.scriptedServer("mallory", 1, func(o protocol.ServerOffer) protocol.Decision {
		id := contractIDOf("alice", *requestID.Load())
		stdout := []byte("alice's log\n")
		logEnd, _ := json.Marshal(protocol.OutputEnd{Stdout: int64(len(stdout)), Cap: process.DefaultOutputCap})
		archive := make([]byte, 1024) // an empty tar: two zero blocks
		resultsEnd, _ := json.Marshal(protocol.OutputEnd{Results: int64(len(archive))})
		for _, c := range []struct {
			part, stream string
			data         []byte
		}{
			{protocol.PartLog, protocol.StreamStdout, stdout},
			{protocol.PartLog, protocol.StreamEnd, logEnd},
			{protocol.PartResults, protocol.StreamResults, archive},
			{protocol.PartResults, protocol.StreamEnd, resultsEnd},
		} {
			mallory.publishOutput(id, c.part, c.stream, 0, c.data, protocol.OutputMsgID("gpu1", id, c.stream, 0, c.data))
		}
		return protocol.Decision{Reason: "not today"}
	})
	alice := m.client("alice")
	id := offerUntilAcceptedAs(t, alice, echo("alice's", "log"), func(r string) { requestID.Store(&r) })
	assert.Equal(t, "gpu1", m.contract(id).Server)
	whole(t, alice, id, "alice's log\n")
	assert.Equal(t, contract.OutputCaps{Log: process.DefaultOutputCap, Results: spool.DefaultResultsCap}, m.contract(id).Output,
		"the agent declared its caps at the start")
}

// counted is the value of counter name with the label reason in reg.
func counted(t testing.TB, reg *prometheus.Registry, name, reason string) float64 {
	t.Helper()
	return metrictest.Counter(t, reg, name, "reason", reason)
}

// TestOutputHeldToItsCaps: the contract's server declared at the start
// what it would send; the exchange relays nothing past it (and counts
// what it drops), and alice's reader says which bytes did not come:
// those the end counts past the cap, and a gap between chunks.
func TestOutputHeldToItsCaps(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{})
	m.wallet("alice", "100")
	gpu1 := m.scriptedServer("gpu1", 1, accept)
	gpu1.declare.Store(&contract.OutputCaps{Log: 10, Results: 1024})
	alice := m.client("alice")
	c := m.running(alice, terms("alice"))
	assert.Equal(t, contract.OutputCaps{Log: 10, Results: 1024}, c.Output, "the caps declared are on the record")

	gpu1.publishOutput(c.ID, protocol.PartLog, protocol.StreamStdout, 0, []byte("0123"), "")
	gpu1.publishOutput(c.ID, protocol.PartLog, protocol.StreamStdout, 6, []byte("6789"), "")     // a gap: 4 and 5 never came
	gpu1.publishOutput(c.ID, protocol.PartLog, protocol.StreamStdout, 10, []byte("past it"), "") // past the cap
	end, _ := json.Marshal(protocol.OutputEnd{Stdout: 17, Cap: 10})
	gpu1.publishOutput(c.ID, protocol.PartLog, protocol.StreamEnd, 0, end, "")

	var stdout bytes.Buffer
	got, err := alice.FollowLogs(context.Background(), c.ID, bidder.Follow{}, &stdout, io.Discard)
	require.NotNil(t, got)
	assert.Equal(t, "01236789", stdout.String(), "what came, each at its place")
	assert.Equal(t, outputLost, bourse.ErrorCode(err), "%v", err)
	assert.ErrorContains(t, err, "stdout bytes 4 to 6")
	assert.ErrorContains(t, err, "stdout bytes 10 to 17")
	assert.Equal(t, float64(1), counted(t, reg, "bourse_exchange_output_dropped_total", "over_cap"))

	// The archive must come whole and in order: nothing is taken past a
	// hole, nor past the client's own bound.
	gpu1.publishOutput(c.ID, protocol.PartResults, protocol.StreamResults, 0, []byte("aaaa"), "")
	gpu1.publishOutput(c.ID, protocol.PartResults, protocol.StreamResults, 8, []byte("bbbb"), "")
	end, _ = json.Marshal(protocol.OutputEnd{Results: 12})
	gpu1.publishOutput(c.ID, protocol.PartResults, protocol.StreamEnd, 0, end, "")
	var archive bytes.Buffer
	_, err = alice.Results(context.Background(), c.ID, bidder.Follow{}, &archive)
	assert.Equal(t, outputLost, bourse.ErrorCode(err), "%v", err)
	assert.ErrorContains(t, err, "results bytes 4 to 8")
	assert.Equal(t, "aaaa", archive.String())
	archive.Reset()
	_, err = alice.Results(context.Background(), c.ID, bidder.Follow{MaxBytes: 2}, &archive)
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	assert.Empty(t, archive.String())

	r, err := alice.Logs(context.Background(), c.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(10), r.Cap, "the reply says the cap")
	r, err = alice.ResultsPage(context.Background(), c.ID, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1024), r.Cap)
}
