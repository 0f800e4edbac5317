package agent_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
)

// asked is one question of the agent's about its final readings: the
// readings it carried.
type asked struct {
	readings []contract.Reading
	msg      *nats.Msg
}

// onReceipts has the exchange hear the agents' receipts requests, which
// the test answers (answer).
func (x *exchange) onReceipts() chan asked {
	x.t.Helper()
	ch := make(chan asked, 64)
	_, err := x.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbReceipts), func(m *nats.Msg) {
		rs, err := protocol.DecodeReadings(m.Data)
		if err != nil {
			x.t.Errorf("receipts request: %v", err)
			return
		}
		q := asked{msg: m}
		for _, r := range rs.Readings {
			rd, err := protocol.DecodeReading(r.Reading)
			if err != nil {
				x.t.Errorf("a reading in a receipts request: %v", err)
				return
			}
			q.readings = append(q.readings, rd)
		}
		ch <- q
	})
	require.NoError(x.t, err)
	require.NoError(x.t, x.nc.Flush())
	return ch
}

// answer answers a question with one receipt of status for each reading.
func (x *exchange) answer(q asked, status protocol.ReceiptStatus, err *bourse.Error) {
	var out protocol.Receipts
	for _, rd := range q.readings {
		out.Receipts = append(out.Receipts, protocol.Receipt{Contract: rd.Contract, Seq: rd.Seq, Status: status, Stored: rd.Seq, Error: err})
	}
	x.respond(q.msg, out)
}

// nextAsked waits for the agent's next question.
func nextAsked(t *testing.T, ch chan asked, within time.Duration) asked {
	t.Helper()
	select {
	case q := <-ch:
		return q
	case <-time.After(within):
		t.Fatalf("the agent asked nothing within %v", within)
		return asked{}
	}
}

// settlingBeat waits for a heartbeat whose settling list is want.
func (x *exchange) settlingBeat(t *testing.T, want []string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case h := <-x.beats:
			if slices.Equal(h.Settling, want) {
				return
			}
		case <-deadline:
			t.Fatalf("no heartbeat lists %v as settling", want)
		}
	}
}

// TestFinalHeldUntilItsReceipt: to an exchange that gives receipts, the
// agent holds a final reading the stream acknowledged until a receipt
// says the exchange has it: its heartbeats list the contract as settling,
// it asks the exchange about the reading, carrying it, and asks again
// while the answer is "again"; a receipt that it is kept ends it all.
func TestFinalHeldUntilItsReceipt(t *testing.T) {
	x := newExchange(t, setup{readings: true, receipts: true})
	questions := x.onReceipts()
	x.startAgent("gpu1", agent.Config{OutboxDir: t.TempDir()})
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 200*time.Millisecond))
	require.NoError(t, err)
	x.settlingBeat(t, []string{"c1"})

	q := nextAsked(t, questions, 5*time.Second)
	require.Len(t, q.readings, 1)
	final := q.readings[0]
	assert.True(t, final.Final)
	assert.Equal(t, "c1", final.Contract)
	assert.Contains(t, finalsOf(x.allMsgs("gpu1")), final, "asked about a reading the stream does not have")
	x.answer(q, protocol.ReceiptAgain, &bourse.Error{Code: bourse.ERateLimited, RetryAfterMS: 100})

	q = nextAsked(t, questions, 3*time.Second)
	require.Equal(t, []contract.Reading{final}, q.readings, "asked again about something else")
	x.answer(q, protocol.ReceiptKept, nil)
	x.settlingBeat(t, nil)
	select {
	case q := <-questions:
		t.Fatalf("asked again after the receipt: %+v", q.readings)
	case <-time.After(2500 * time.Millisecond):
	}
}

// TestReceiptTold: a receipt the exchange publishes unasked (it stored
// the final reading from the stream) ends the hold; the agent asks
// nothing.
func TestReceiptTold(t *testing.T) {
	x := newExchange(t, setup{readings: true, receipts: true})
	questions := x.onReceipts()
	x.startAgent("gpu1", agent.Config{})
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 200*time.Millisecond))
	require.NoError(t, err)
	x.settlingBeat(t, []string{"c1"})
	var final contract.Reading
	require.Eventually(t, func() bool {
		f := finalsOf(x.allMsgs("gpu1"))
		if len(f) == 0 {
			return false
		}
		final = f[0]
		return true
	}, 5*time.Second, 20*time.Millisecond)
	body, err := json.Marshal(protocol.Receipts{Receipts: []protocol.Receipt{{Contract: "c1", Seq: final.Seq, Status: protocol.ReceiptKept, Stored: final.Seq}}})
	require.NoError(t, err)
	require.NoError(t, x.nc.Publish(protocol.DeliverSubject("gpu1", protocol.DeliverReceipts), body))
	x.settlingBeat(t, nil)
	select {
	case q := <-questions:
		t.Fatalf("asked about %+v after the receipt", q.readings)
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestHeldFinalOutlivesTheAgent: a final reading with no receipt when
// the agent stops stays in its outbox, and the next run asks about it at
// once, though the stream has it.
func TestHeldFinalOutlivesTheAgent(t *testing.T) {
	x := newExchange(t, setup{readings: true, receipts: true})
	dir := t.TempDir()
	ag := x.startAgent("gpu1", agent.Config{OutboxDir: dir, ShutdownTimeout: 300 * time.Millisecond})
	_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 100*time.Millisecond))
	require.NoError(t, err)
	x.settlingBeat(t, []string{"c1"})
	require.NoError(t, ag.shutdown(t))

	questions := x.onReceipts()
	x.startAgent("gpu1", agent.Config{OutboxDir: dir})
	q := nextAsked(t, questions, 3*time.Second)
	require.Len(t, q.readings, 1)
	assert.True(t, q.readings[0].Final)
	assert.Equal(t, "c1", q.readings[0].Contract)
	x.answer(q, protocol.ReceiptKept, nil)
	x.settlingBeat(t, nil)
}

// allMsgs is every reading of server id's readings messages on the
// usage stream so far.
func (x *exchange) allMsgs(id string) []contract.Reading {
	x.t.Helper()
	var out []contract.Reading
	for _, m := range x.readingsOf(id) {
		out = append(out, m.rds...)
	}
	return out
}
