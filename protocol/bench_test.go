package protocol_test

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// recordEvent is an event as the exchange published it before events
// carried what changed: the whole record but its terms (the old
// Event.Lean), internal fields and all.
type recordEvent struct {
	Type     protocol.EventType `json:"type"`
	Contract contract.Contract  `json:"contract,omitzero"`
	Due      decimal.Decimal    `json:"due,omitzero"`
	At       time.Time          `json:"at"`
}

// BenchmarkEventsOfALife encodes the events of one contract's life, the
// shape BenchmarkOffers makes (accepted, started, one reading, settled),
// as the exchange publishes them now (change) and as it did (record), and
// reports their bytes.
func BenchmarkEventsOfALife(b *testing.B) {
	rec := fullRecord(contract.StateSettled)
	rec.Stuck, rec.Signed, rec.AcceptSigned = nil, nil, nil
	life := []protocol.EventType{protocol.EventAccepted, protocol.EventStarted, protocol.EventReading, protocol.EventSettled}
	b.Run("change", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = 0
			for _, typ := range life {
				out, err := protocol.Marshal(protocol.Event{Type: typ, Contract: protocol.Changed(typ, &rec), At: rec.SettledAt})
				if err != nil {
					b.Fatal(err)
				}
				n += len(out)
			}
		}
		b.ReportMetric(float64(n), "bytes/life")
	})
	b.Run("record", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = 0
			for _, typ := range life {
				c := rec
				if typ != protocol.EventAccepted {
					c.Terms = contract.Terms{}
				}
				out, err := protocol.Marshal(recordEvent{Type: typ, Contract: c, At: rec.SettledAt})
				if err != nil {
					b.Fatal(err)
				}
				n += len(out)
			}
		}
		b.ReportMetric(float64(n), "bytes/life")
	})
}

// BenchmarkRecord encodes a settled contract's record as the SQL store
// writes it at every Open and Update (contract.AppendRecord), beside
// protocol.Marshal, which wrote it before, and an event of it both ways.
func BenchmarkRecord(b *testing.B) {
	rec := fullRecord(contract.StateSettled)
	rec.Stuck, rec.Signed, rec.AcceptSigned = nil, nil, nil
	b.Run("append", func(b *testing.B) {
		for b.Loop() {
			if _, ok := rec.AppendRecord(make([]byte, 0, 1024)); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := protocol.Marshal(rec); err != nil {
				b.Fatal(err)
			}
		}
	})
	ev := protocol.Event{Type: protocol.EventSettled, Contract: protocol.Changed(protocol.EventSettled, &rec), At: rec.SettledAt}
	b.Run("event-append", func(b *testing.B) {
		for b.Loop() {
			if _, err := protocol.MarshalEvent(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("event-marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := protocol.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
