package exchange

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Event is what the House tells its Notifier: a protocol.Event with the
// contract's whole record, for the parties in the exchange's own process
// (the simulator, tests). A Notifier that tells clients sends Wire.
type Event struct {
	Type protocol.EventType
	// Contract is the record as the event left it; zero in the events of
	// a waiting offer, which carry Waiting.
	Contract contract.Contract
	Waiting  *contract.Waiting
	Counters []contract.Counter
	Due      decimal.Decimal
	Warning  string
	Message  string
	At       time.Time
}

// Wire is the event as a client receives it: of the contract, only what
// the event changed (protocol.Changed).
func (e *Event) Wire() protocol.Event {
	ev := protocol.Event{Type: e.Type, Waiting: e.Waiting, Counters: e.Counters, Due: e.Due,
		Warning: e.Warning, Message: e.Message, At: e.At}
	if e.Contract.ID != "" {
		ev.Contract = protocol.Changed(e.Type, &e.Contract)
	}
	return ev
}
