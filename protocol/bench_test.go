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
