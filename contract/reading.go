package contract

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Reading is a server's cumulative measurement of one contract. Readings of
// a contract carry increasing sequence numbers; the exchange counts each
// sequence number once and ignores stale ones. The final reading settles.
type Reading struct {
	Contract string          `json:"contract"`
	Seq      uint64          `json:"seq"`
	U        decimal.Decimal `json:"u"`      // GPU-seconds busy
	T        Duration        `json:"t"`      // wall time since start
	S        decimal.Decimal `json:"s"`      // minimum share, GPUs
	EnergyJ  decimal.Decimal `json:"energy"` // joules, where the meter knows
	At       time.Time       `json:"at"`
	Final    bool            `json:"final,omitempty"`
	Reason   Reason          `json:"reason,omitempty"` // with Final
	ExitCode *int            `json:"exit_code,omitempty"`
}

// Usage is the reading's quantities as Charge prices them.
func (r Reading) Usage() Usage {
	return Usage{U: r.U, T: time.Duration(r.T), S: r.S}
}

// serverReasons are the reasons a server may give in a final reading; the
// others (server_lost, not_started, expired) are the exchange's verdicts.
var serverReasons = map[Reason]bool{
	ReasonCompleted: true, ReasonKilled: true, ReasonSuspended: true, ReasonTimeLimit: true,
	ReasonExhausted: true, ReasonPreempted: true, ReasonShutdown: true, ReasonFailed: true,
}

// Check checks a reading as it arrives, before anything stores it: a
// contract id, a sequence number from 1, every quantity within the limits
// of an offer's numbers (CheckQuantity: energy too), a time, and a
// reason only on a final reading and only one a server may give. A reading
// that passes can always be priced, so storing it can never lock an
// escrow. Whether its T and U are believable is the exchange's to judge,
// by its own clock (docs/protocol.md, "What the exchange believes").
func (r Reading) Check() error {
	const op = "contract.Reading"
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if r.Contract == "" || len(r.Contract) > 64 {
		return bad("contract", "want an id of 1-64 characters")
	}
	if r.Seq == 0 {
		return bad("seq", "sequence numbers start at 1")
	}
	if err := r.Usage().Check(op); err != nil {
		return err
	}
	if err := CheckQuantity(op, "energy", r.EnergyJ); err != nil {
		return err
	}
	if y := r.At.UTC().Year(); r.At.IsZero() || y < 2000 || y > 9999 {
		return bad("at", "%s is not a time a meter read", r.At.UTC().Format(time.RFC3339))
	}
	switch {
	case !r.Final && r.Reason != "":
		return bad("reason", "only a final reading has a reason")
	case r.Final && r.Reason != "" && !serverReasons[r.Reason]:
		return bad("reason", "%q is not a reason a server gives", r.Reason)
	}
	return nil
}
