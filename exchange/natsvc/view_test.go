package natsvc_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// capGPUs gives client a concurrent-GPU cap of n, as bourse admin cap
// does, through the treasury beside the market's ledger.
func (m *market) capGPUs(client string, n int) {
	m.t.Helper()
	tr, err := sqltreasury.Beside(context.Background(), m.ledger, nil)
	require.NoError(m.t, err)
	_, err = tr.SetCap(context.Background(), "ops", client, n, "cap-set/"+client)
	require.NoError(m.t, err)
}

// internalKeys are the record's fields that are the exchange's own.
var internalKeys = []string{"cap_holds", "cap_hold", "spend_holds", "last_seen", "stuck"}

// keysIn gathers every object key of a JSON message, at any depth.
func keysIn(t *testing.T, data []byte) map[string]bool {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(data, &v), "%s", data)
	out := map[string]bool{}
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				out[k] = true
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestPartiesSeeNoInternals: on every subject a client reads about its
// contracts (the offer's reply, contract, contracts, suspend and kill,
// and its events) and on those a server reads (the start, the reply to
// its started report), no message carries the exchange's own fields,
// though the contracts have cap holds. And each event carries exactly
// the fields of the contract that its type says.
func TestPartiesSeeNoInternals(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.capGPUs("alice", 4) // so that the records hold caps
	srv := m.scriptedServer("gpu1", 4, accept)
	nc := natstest.Connect(t, m.ns, "")

	var mu sync.Mutex
	var events []*nats.Msg
	read := map[string][][]byte{} // what each subject carried
	sub := func(subject string) {
		_, err := nc.Subscribe(subject, func(msg *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			if strings.HasSuffix(subject, ".event") {
				events = append(events, msg)
			}
			read[subject] = append(read[subject], msg.Data)
		})
		require.NoError(t, err)
	}
	sub(protocol.DeliverSubject("alice", protocol.DeliverEvent))
	sub(protocol.DeliverSubject("gpu1", protocol.DeliverStart))
	require.NoError(t, nc.Flush())
	// Each party asks on a connection of its own inbox.
	conns := map[string]*nats.Conn{}
	for _, who := range []string{"alice", "gpu1"} {
		conns[who] = natstest.Connect(t, m.ns, protocol.InboxPrefix(who))
	}
	request := func(subject string, body any) []byte {
		t.Helper()
		b, _ := json.Marshal(body)
		msg, err := conns[strings.Split(subject, ".")[3]].Request(subject, b, 5*time.Second)
		require.NoError(t, err)
		require.NoError(t, natswire.DecodeError(msg), "%s", msg.Data)
		mu.Lock()
		read[subject] = append(read[subject], msg.Data)
		mu.Unlock()
		return msg.Data
	}
	offer := func(requestID string) protocol.ContractView {
		t.Helper()
		var r protocol.OfferReply
		require.NoError(t, json.Unmarshal(request(protocol.ClientSubject("alice", protocol.VerbOffer),
			protocol.OfferRequest{RequestID: requestID, Terms: terms("alice")}), &r))
		require.NotNil(t, r.Contract)
		return *r.Contract
	}

	// One contract runs and settles.
	c := offer("view-1")
	<-srv.starts
	waitFor(t, "the start", func() bool { return m.contract(c.ID).State == contract.StateRunning })
	require.NotEmpty(t, m.contract(c.ID).CapHolds, "the record holds its cap")
	started := request(protocol.ServerSubject("gpu1", protocol.VerbStarted), protocol.Started{Contract: c.ID, GPUs: []int{0}, At: time.Now().UTC()})
	srv.publish(reading(c.ID, 1, "5", 10, false))
	srv.publish(reading(c.ID, 2, "20", 30, true))
	m.settled(c.ID, 5*time.Second)

	// Another is killed before it starts: voided.
	srv.muteStarts.Store(true)
	v := offer("view-2")
	request(protocol.ClientSubject("alice", protocol.VerbKill), protocol.ControlRequest{Contract: v.ID})
	request(protocol.ClientSubject("alice", protocol.VerbContract), protocol.ContractRequest{Contract: c.ID})
	request(protocol.ClientSubject("alice", protocol.VerbContracts), protocol.ContractsRequest{})
	waitFor(t, "the settled and voided events", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= 5 // accepted, started, reading, settled; accepted, voided
	})
	time.Sleep(100 * time.Millisecond) // any late event
	assert.Contains(t, string(started), `"state":"running"`, "the server's started reply is its view of the contract")

	mu.Lock()
	defer mu.Unlock()
	for subject, msgs := range read {
		for _, data := range msgs {
			got := keysIn(t, data)
			for _, k := range internalKeys {
				assert.False(t, got[k], "%s carried %q: %s", subject, k, data)
			}
		}
	}
	want := map[protocol.EventType][]string{
		protocol.EventAccepted: {"accepted_at", "charge", "client", "id", "refund", "server", "start_deadline", "state", "terms"},
		protocol.EventStarted:  {"gpus", "id", "started_at", "state"},
		protocol.EventReading:  {"id", "reading", "state"},
		protocol.EventSettled:  {"charge", "id", "reading", "reason", "refund", "settled_at", "state"},
		protocol.EventVoided:   {"charge", "id", "reason", "refund", "settled_at", "state"},
	}
	seen := map[protocol.EventType]bool{}
	for _, msg := range events {
		var ev struct {
			Type     protocol.EventType         `json:"type"`
			Contract map[string]json.RawMessage `json:"contract"`
		}
		require.NoError(t, json.Unmarshal(msg.Data, &ev))
		seen[ev.Type] = true
		if w, ok := want[ev.Type]; assert.True(t, ok, "event %s", msg.Data) {
			assert.Equal(t, w, slices.Sorted(maps.Keys(ev.Contract)), "the %s event's contract: %s", ev.Type, msg.Data)
		}
	}
	assert.Len(t, seen, len(want), "every event type of a contract's life")
}
