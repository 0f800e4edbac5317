package sim

import (
	"encoding/json"
	"io"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

// eventLog writes the contract log: one JSON line per event of a
// contract's life (accepted, started, settled, voided), in the order the
// House told them. Two runs of one scenario and seed write the same
// bytes. The log is for recomputing the money: an accepted line carries
// the terms that price the contract, a settled line the final reading it
// was priced on and what it cost, so that anyone can check each charge
// with docs/pricing.md's formula and nothing else. Readings before the
// final one are not logged: they price nothing, and how many a run sends
// is the engine's business, not the market's (docs/sim.md, "The
// contract log").
type eventLog struct {
	w     io.Writer
	scale int32
	err   error
}

// logLine is one event: what changed, not the whole contract. Amounts
// and quantities are decimal strings, exact; times of a contract are in
// seconds, also as exact decimal strings, so that no reader has to parse
// Go's durations.
type logLine struct {
	At       time.Time          `json:"at"`
	Type     protocol.EventType `json:"type"`
	Contract string             `json:"contract"`
	Client   string             `json:"client"`
	Server   string             `json:"server"`
	GPUs     int                `json:"gpus"`
	State    contract.State     `json:"state"`
	Reason   contract.Reason    `json:"reason,omitempty"`

	// The terms, on the accepted line.
	Model       string           `json:"model,omitempty"`
	Preemptible bool             `json:"preemptible,omitempty"`
	TimeLimit   *decimal.Decimal `json:"time_limit_s,omitempty"`
	Prepayment  *decimal.Decimal `json:"prepayment,omitempty"`
	P           *contract.Curve  `json:"p,omitempty"`
	Q           *contract.Curve  `json:"q,omitempty"`
	Scale       *int32           `json:"scale,omitempty"`

	// The final reading, on the settled line.
	U *decimal.Decimal `json:"u,omitempty"`
	T *decimal.Decimal `json:"t_s,omitempty"`
	S *decimal.Decimal `json:"s,omitempty"`

	// What the contract cost, on the settled and voided lines.
	Charge *decimal.Decimal `json:"charge,omitempty"`
	Refund *decimal.Decimal `json:"refund,omitempty"`
}

func (l *eventLog) write(ev exchange.Event) {
	if l.w == nil || l.err != nil {
		return
	}
	c := ev.Contract
	line := logLine{At: ev.At, Type: ev.Type, Contract: c.ID, Client: c.Client, Server: c.Server, GPUs: c.Terms.GPUs, State: c.State, Reason: c.Reason}
	switch ev.Type {
	case protocol.EventAccepted:
		t := c.Terms
		limit, scale := secondsOf(t.TimeLimit), l.scale
		line.Model, line.Preemptible = t.Class.Model, t.Preemptible
		line.TimeLimit, line.Prepayment, line.Scale = &limit, &t.Prepayment, &scale
		// An empty curve is written [], not left out: "no Q term" is a
		// term a reader should see.
		p, q := orEmpty(t.P), orEmpty(t.Q)
		line.P, line.Q = &p, &q
	case protocol.EventStarted:
	case protocol.EventSettled:
		if r := c.Reading; r != nil {
			t := secondsOf(time.Duration(r.T))
			line.U, line.T, line.S = &r.U, &t, &r.S
		} else {
			// Settled with no reading (the sweep's rule): priced on
			// nothing, which the line says rather than leaving out.
			line.U, line.T, line.S = &decimal.Zero, &decimal.Zero, &decimal.Zero
		}
		line.Charge, line.Refund = &c.Charge, &c.Refund
	case protocol.EventVoided:
		line.Charge, line.Refund = &c.Charge, &c.Refund
	default:
		return // readings and warnings price nothing
	}
	b, err := json.Marshal(line)
	if err == nil {
		_, err = l.w.Write(append(b, '\n'))
	}
	l.err = err
}

// secondsOf is d in seconds, exactly (to the nanosecond).
func secondsOf(d time.Duration) decimal.Decimal { return decimal.New(int64(d), -9) }

func orEmpty(c contract.Curve) contract.Curve {
	if c == nil {
		return contract.Curve{}
	}
	return c
}
