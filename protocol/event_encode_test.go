package protocol_test

import (
	"bytes"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// eventTypes are the events of a contract's life, and the warning.
var eventTypes = []protocol.EventType{protocol.EventAccepted, protocol.EventStarted, protocol.EventReading,
	protocol.EventSettled, protocol.EventVoided, protocol.EventSpendWarning}

// sameEvent fails unless MarshalEvent writes what Marshal writes of e,
// and, with fast, without Marshal.
func sameEvent(t *testing.T, e protocol.Event, fast bool) {
	t.Helper()
	want, err := protocol.Marshal(e)
	require.NoError(t, err)
	got, err := protocol.MarshalEvent(e)
	require.NoError(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("MarshalEvent wrote\n%s\nprotocol.Marshal\n%s", got, want)
	}
	_, ok := protocol.AppendEvent(e, nil)
	if fast {
		assert.True(t, ok, "encoded without reflection: %s", want)
	}
}

// TestMarshalEvent: an event's encoding is Marshal's, byte for byte, for
// every event of a contract and every part of it present or not; the
// events of contracts take the fast path, the others Marshal's.
func TestMarshalEvent(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 13, 5, time.UTC)
	for _, c := range []contract.Contract{fullRecord(contract.StateSettled), recordWith("a<b>&\"\\\u2028\x01é", -3, []byte("\x00\xff"), 1, -3600),
		recordWith("", 1<<40, nil, 999_999_999, 5*3600+1800),
		{ID: "c-2", State: contract.StateAccepted}} {
		for _, typ := range eventTypes {
			sameEvent(t, protocol.Event{Type: typ, Contract: protocol.Changed(typ, &c), At: at}, true)
			sameEvent(t, protocol.Event{Type: typ, Contract: protocol.Changed(typ, &c), Due: dectest.D("0.0500"),
				Warning: "<cap> 90%", Message: "é", At: at.In(time.FixedZone("z", 7200))}, true)
		}
	}
	sameEvent(t, protocol.Event{Type: protocol.EventReading, Due: dectest.D("0.00"), At: at}, true) // a zero due: none
	// Waiting offers' events, and those encoding/json writes otherwise,
	// go through Marshal.
	w := contract.Waiting{ID: "c-9", Client: "bob", QueuedAt: at, Until: at.Add(time.Hour)}
	sameEvent(t, protocol.Event{Type: protocol.EventLeftBook, Waiting: &w, Message: "expired", At: at}, false)
	sameEvent(t, protocol.Event{Type: protocol.EventCountered, Waiting: &w, Counters: []contract.Counter{{Server: "gpu1"}}, At: at}, false)
	bad := recordWith("\xff", 1, nil, 0, 0)
	sameEvent(t, protocol.Event{Type: protocol.EventAccepted, Contract: protocol.Changed(protocol.EventAccepted, &bad), At: at}, false)
	_, ok := protocol.AppendEvent(protocol.Event{Type: protocol.EventAccepted, Contract: protocol.Changed(protocol.EventAccepted, &bad), At: at}, nil)
	assert.False(t, ok, "a string not UTF-8")
	_, ok = protocol.AppendEvent(protocol.Event{Type: protocol.EventStarted, At: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, nil)
	assert.False(t, ok, "a year encoding/json refuses")
}

// FuzzMarshalEvent: MarshalEvent writes what Marshal writes of the
// events of any record, whatever its strings, counts, bodies and times.
func FuzzMarshalEvent(f *testing.F) {
	f.Add("a<b>&\"\\\u2028\x01\xff", int64(-3), []byte("\x00"), int64(1), -3600, "0.5")
	f.Add("", int64(0), []byte(nil), int64(0), 0, "0")
	f.Add("é", int64(1<<62), []byte("offer\naccept"), int64(-999_999_999), 14*3600, "-12.000")
	f.Fuzz(func(t *testing.T, s string, n int64, body []byte, ns int64, off int, due string) {
		c := recordWith(s, n, body, ns, off%(30*3600))
		d, err := decimal.NewFromString(due)
		if err != nil {
			return
		}
		for _, typ := range eventTypes {
			e := protocol.Event{Type: typ, Contract: protocol.Changed(typ, &c), Due: d, Warning: s, At: c.AcceptedAt}
			want, werr := protocol.Marshal(e)
			got, gerr := protocol.MarshalEvent(e)
			if werr != nil || gerr != nil {
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("Marshal: %v, MarshalEvent: %v", werr, gerr)
				}
				continue
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("MarshalEvent wrote\n%s\nprotocol.Marshal\n%s", got, want)
			}
			if _, ok := protocol.AppendEvent(e, nil); !ok && utf8.ValidString(s) && contract.TimeEncodable(c.AcceptedAt) && contract.TimeEncodable(c.Reading.At) {
				t.Fatalf("declined an event it can write: %s", want)
			}
		}
	})
}
