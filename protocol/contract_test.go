package protocol_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// internal are the record's fields that are the exchange's own: no party
// reads them on the wire.
var internal = []string{"cap_holds", "cap_hold", "spend_holds", "last_seen", "stuck"}

// fullRecord is a record with every field set, internal ones included.
func fullRecord(state contract.State) contract.Contract {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := contract.Reading{Contract: "c-1", Seq: 7, U: dectest.D("12.5"), T: contract.Duration(10 * time.Second), S: dectest.D("1"),
		EnergyJ: dectest.D("300"), At: t0.Add(11 * time.Second), Final: true, Reason: contract.ReasonCompleted}
	return contract.Contract{
		ID: "c-1", Client: "alice", Server: "gpu1",
		Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 2, TimeLimit: time.Hour, Prepayment: dectest.D("40"),
			P: contract.Flat(dectest.D("0.004")), Server: "gpu1"},
		State: state, Reason: contract.ReasonCompleted, Resumes: "c-0", GPUs: []int{2, 3}, Meter: contract.MeterNVML,
		QueuedAt: t0.Add(-time.Minute), AcceptedAt: t0, StartDeadline: t0.Add(15 * time.Second),
		StartedAt: t0.Add(time.Second), SettledAt: t0.Add(12 * time.Second), LastSeen: t0.Add(12 * time.Second),
		Reading: &r, Signed: &contract.Signed{Body: []byte(`{"seq":7}`), Sig: "sig-r"},
		AcceptSigned: &contract.Signed{Body: []byte("offer\naccept"), Sig: "sig-a"},
		CapHolds:     []string{"gpus/c-1", "gpus/c-1/acme"}, SpendHolds: []string{"spend/c-1/day"},
		Charge: dectest.D("0.05"), Refund: dectest.D("39.95"),
		Stuck: &contract.Stuck{Since: t0.Add(12 * time.Second), Attempts: 3, Retry: t0.Add(20 * time.Second), Error: "ledger: hold h/c-1 of wallet/CRED/acme"},
		Stop:  &contract.Stop{Reason: contract.ReasonKilled, At: t0.Add(5 * time.Second), By: t0.Add(20 * time.Second)},
	}
}

// keys are the names of the JSON object v encodes to.
func keys(t *testing.T, v any) []string {
	t.Helper()
	b, err := protocol.Marshal(v)
	require.NoError(t, err)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m))
	return slices.Sorted(maps.Keys(m))
}

// TestViewLeavesOutInternals: the view has every field of the record but
// the exchange's own, and says a settlement is delayed only while it is.
func TestViewLeavesOutInternals(t *testing.T) {
	running := fullRecord(contract.StateRunning)
	got := keys(t, protocol.View(running))
	assert.Equal(t, []string{"accept_signed", "accepted_at", "charge", "client", "gpus", "id", "meter", "queued_at", "reading",
		"reason", "refund", "resumes", "server", "settled_at", "settlement_delayed_since", "signed", "start_deadline", "started_at",
		"state", "stop", "terms"}, got)
	for _, k := range internal {
		assert.NotContains(t, got, k)
	}
	assert.Equal(t, running.Stuck.Since, protocol.View(running).SettlementDelayedSince)
	settled := fullRecord(contract.StateSettled)
	assert.True(t, protocol.View(settled).SettlementDelayedSince.IsZero(), "a settled contract is no longer delayed; its stuck is history")
}

// TestChanged: each event type carries exactly its fields of the
// contract (docs/protocol.md, "Events to clients").
func TestChanged(t *testing.T) {
	for _, c := range []struct {
		typ   protocol.EventType
		state contract.State
		want  []string
	}{
		{protocol.EventAccepted, contract.StateAccepted, []string{"accept_signed", "accepted_at", "charge", "client", "gpus", "id", "meter",
			"queued_at", "reading", "reason", "refund", "resumes", "server", "settled_at", "signed", "start_deadline", "started_at", "state", "terms"}},
		{protocol.EventStarted, contract.StateRunning, []string{"gpus", "id", "meter", "started_at", "state"}},
		{protocol.EventReading, contract.StateRunning, []string{"id", "reading", "signed", "state"}},
		{protocol.EventSettled, contract.StateSettled, []string{"charge", "id", "reading", "reason", "refund", "settled_at", "signed", "state"}},
		{protocol.EventVoided, contract.StateVoided, []string{"charge", "id", "reading", "reason", "refund", "settled_at", "signed", "state"}},
		{protocol.EventSpendWarning, contract.StateAccepted, []string{"id", "state"}},
	} {
		t.Run(string(c.typ), func(t *testing.T) {
			rec := fullRecord(c.state)
			assert.Equal(t, c.want, keys(t, protocol.Changed(c.typ, &rec)))
			ev := protocol.Event{Type: c.typ, Contract: protocol.Changed(c.typ, &rec), At: rec.AcceptedAt}
			b, err := protocol.Marshal(ev)
			require.NoError(t, err)
			for _, k := range internal {
				assert.NotContains(t, string(b), `"`+k+`"`)
			}
		})
	}
	t.Run("Sparse", func(t *testing.T) { // no reading yet, no signatures: left out, not null
		rec := fullRecord(contract.StateVoided)
		rec.Reading, rec.Signed = nil, nil
		assert.Equal(t, []string{"charge", "id", "reason", "refund", "settled_at", "state"}, keys(t, protocol.Changed(protocol.EventVoided, &rec)))
	})
}

// TestApply: the events of a contract's life, merged in any order into
// what the accepted event said, make the record's view.
func TestApply(t *testing.T) {
	rec := fullRecord(contract.StateSettled)
	rec.Stuck = nil
	rec.Stop = nil // replies show a client's stop; no event carries it
	accepted := rec
	accepted.State, accepted.Reason, accepted.GPUs, accepted.Meter = contract.StateAccepted, "", nil, ""
	accepted.StartedAt, accepted.SettledAt, accepted.Reading, accepted.Signed = time.Time{}, time.Time{}, nil, nil
	accepted.Charge, accepted.Refund = dectest.D("0"), dectest.D("0")
	running := rec
	running.State, running.Reason, running.SettledAt, running.Charge, running.Refund = contract.StateRunning, "", time.Time{}, dectest.D("0"), dectest.D("0")
	early := *rec.Reading
	early.Seq, early.Final, early.Reason = 3, false, ""
	reading := running
	reading.Reading, reading.Signed = &early, &contract.Signed{Body: []byte(`{"seq":3}`), Sig: "sig-3"}
	changes := []protocol.ContractChange{
		*protocol.Changed(protocol.EventStarted, &running),
		*protocol.Changed(protocol.EventReading, &reading),
		*protocol.Changed(protocol.EventSettled, &rec),
	}
	want := jsonOf(t, protocol.View(rec))
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}, {1, 2, 0}, {0, 2, 1}} {
		v := protocol.View(accepted) // what the offer's reply or the accepted event said
		for _, i := range order {
			v.Apply(changes[i])
		}
		assert.Equal(t, want, jsonOf(t, v), "order %v", order)
	}
	var fromNothing protocol.ContractView
	fromNothing.Apply(*protocol.Changed(protocol.EventAccepted, &accepted))
	assert.Equal(t, jsonOf(t, protocol.View(accepted)), jsonOf(t, fromNothing), "the accepted event is the whole contract")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := protocol.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
