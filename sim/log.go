package sim

import (
	"encoding/json"
	"io"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// eventLog writes the contract log: one JSON line per contract event, in
// the order the House told them. Two runs of one scenario and seed write
// the same bytes.
type eventLog struct {
	w   io.Writer
	err error
}

// logLine is one event: what changed, not the whole contract.
type logLine struct {
	At       time.Time          `json:"at"`
	Type     protocol.EventType `json:"type"`
	Contract string             `json:"contract"`
	Client   string             `json:"client"`
	Server   string             `json:"server"`
	GPUs     int                `json:"gpus"`
	State    trade.State        `json:"state"`
	Reason   trade.Reason       `json:"reason,omitempty"`
	U        *decimal.Decimal   `json:"u,omitempty"`
	Charge   *decimal.Decimal   `json:"charge,omitempty"`
	Refund   *decimal.Decimal   `json:"refund,omitempty"`
}

func (l *eventLog) write(ev protocol.Event) {
	if l.w == nil || l.err != nil {
		return
	}
	c := ev.Contract
	line := logLine{At: ev.At, Type: ev.Type, Contract: c.ID, Client: c.Client, Server: c.Server, GPUs: c.Terms.GPUs, State: c.State, Reason: c.Reason}
	if c.Reading != nil {
		line.U = &c.Reading.U
	}
	if !c.HoldsEscrow() {
		line.Charge, line.Refund = &c.Charge, &c.Refund
	}
	b, err := json.Marshal(line)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	l.err = err
}
