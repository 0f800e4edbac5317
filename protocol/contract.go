package protocol

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// State is where a contract is in its life:
// accepted (escrowed) → running → settled, or accepted → voided.
type State string

const (
	StateAccepted State = "accepted" // prepayment escrowed, job not started yet
	StateRunning  State = "running"
	StateSettled  State = "settled" // stopped, charged and refunded
	StateVoided   State = "voided"  // never started; prepayment returned whole
)

// Reason says why a contract stopped.
type Reason string

const (
	ReasonCompleted  Reason = "completed"            // the job ended by itself
	ReasonKilled     Reason = "killed"               // the client killed it
	ReasonSuspended  Reason = "suspended"            // the client suspended it; resume is a new offer
	ReasonTimeLimit  Reason = "time_limit"           // the wall-clock limit was reached
	ReasonExhausted  Reason = "prepayment_exhausted" // the charge reached the prepayment
	ReasonPreempted  Reason = "preempted"            // a preemptible job gave way to a guaranteed one
	ReasonServerLost Reason = "server_lost"          // the server went silent; settled on its last reading
	ReasonNotStarted Reason = "not_started"          // accepted but never started before its deadline
	ReasonShutdown   Reason = "shutdown"             // the server shut down
	ReasonFailed     Reason = "failed"               // the job could not be started or crashed
)

// Contract is the exchange's record of an accepted offer.
type Contract struct {
	ID     string         `json:"id"`
	Client string         `json:"client"`
	Server string         `json:"server"`
	Terms  contract.Terms `json:"terms"`
	State  State          `json:"state"`
	Reason Reason         `json:"reason,omitempty"`
	// Resumes names the suspended contract whose job this one continues.
	Resumes string `json:"resumes,omitempty"`
	// GPUs are the server's device indexes the job was given.
	GPUs []int `json:"gpus,omitempty"`

	AcceptedAt    time.Time `json:"accepted_at"`
	StartDeadline time.Time `json:"start_deadline"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	SettledAt     time.Time `json:"settled_at,omitzero"`
	// LastSeen is when the exchange last heard of the job (start or a
	// reading), by its own clock; the watchdog measures silence from it.
	LastSeen time.Time `json:"last_seen,omitzero"`

	// The last reading counted, cumulative since the start.
	Reading *Reading `json:"reading,omitempty"`
	// Set at settlement: Charge + Refund = Terms.Prepayment.
	Charge decimal.Decimal `json:"charge"`
	Refund decimal.Decimal `json:"refund"`
}

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

// Usage is the reading's quantities as the contract package prices them.
func (r Reading) Usage() contract.Usage {
	return contract.Usage{U: r.U, T: time.Duration(r.T), S: r.S}
}

// MsgID is the JetStream de-duplication id of a reading.
func (r Reading) MsgID() string { return r.Contract + ":" + uitoa(r.Seq) }

func uitoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
