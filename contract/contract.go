package contract

import (
	"slices"
	"time"

	"github.com/shopspring/decimal"
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
	// ReasonExpired: the contract could not end by any other rule in time
	// (its escrow's deadline passed, or it stayed stuck for the exchange's
	// StuckLimit); settled on its last valid reading, or voided if it had
	// none or that failed too.
	ReasonExpired Reason = "expired"
)

// Contract is the exchange's record of an accepted offer, as the store
// keeps it. No party reads it whole: clients and servers get
// protocol.ContractView, its view without the exchange's own fields (the cap
// and spend holds, LastSeen, Stuck), and events what changed of it.
type Contract struct {
	ID     string `json:"id"`
	Client string `json:"client"`
	Server string `json:"server"`
	// Terms are always there in a contract record.
	Terms  Terms  `json:"terms,omitzero"`
	State  State  `json:"state"`
	Reason Reason `json:"reason,omitempty"`
	// Resumes names the suspended contract whose job this one continues.
	Resumes string `json:"resumes,omitempty"`
	// GPUs are the server's device indexes the job was given.
	GPUs []int `json:"gpus,omitempty"`
	// Meter is how the server measures the job's use, as it reported at
	// the start; empty until then, or from a server that does not say.
	Meter Meter `json:"meter,omitempty"`
	// Output is what the server declared at the start it would send of
	// the job's output; zero until then, or from a server that sends none.
	Output OutputCaps `json:"output,omitzero"`
	// Image is the digest (sha256:…) of the container image the job ran,
	// as its server resolved the terms' reference at the start; empty for
	// a job that names no image.
	Image string `json:"image,omitempty"`
	// Model is the model of the GPUs the job got, as its server said at
	// the start: what was sold, where the terms' class may name none.
	Model string `json:"model,omitempty"`

	// QueuedAt, for a contract made from a waiting offer (Waiting), is
	// when that offer entered the book: it waited AcceptedAt − QueuedAt.
	QueuedAt      time.Time `json:"queued_at,omitzero"`
	AcceptedAt    time.Time `json:"accepted_at"`
	StartDeadline time.Time `json:"start_deadline"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	SettledAt     time.Time `json:"settled_at,omitzero"`
	// LastSeen is when the exchange last heard of the job (start or a
	// reading), by its own clock; the sweep measures silence from it.
	LastSeen time.Time `json:"last_seen,omitzero"`

	// The last reading counted, cumulative since the start.
	Reading *Reading `json:"reading,omitempty"`
	// Signed is that reading as its server sent and signed it, where the
	// exchange requires signatures: the proof of the charge in the
	// server's own words, checkable with its public key alone.
	Signed *Signed `json:"signed,omitempty"`
	// AcceptSigned is the server's signed accept, where the exchange
	// requires signatures: the offer as delivered and the accept, a
	// newline between (protocol.AcceptSigned), and its signature.
	AcceptSigned *Signed `json:"accept_signed,omitempty"`
	// CapHolds are the ledger holds of the contract's GPUs on the
	// concurrent-GPU caps above it (package caps), where each has one:
	// its client's own first (gpus/<contract>), then its project's and
	// organisation's (gpus/<contract>/<owner>). Records written before
	// this list held the client's own kept it apart, in cap_hold; the SQL
	// store reads it back into this list.
	CapHolds []string `json:"cap_holds,omitempty"`
	// SpendHolds are the holds of the prepayment on the spend caps' budgets
	// the contract is under (caps.Spend), one per cap.
	SpendHolds []string `json:"spend_holds,omitempty"`
	// Set at settlement: Charge + Refund = Terms.Prepayment.
	Charge decimal.Decimal `json:"charge"`
	Refund decimal.Decimal `json:"refund"`

	// Stuck is set while the exchange fails to settle or void the
	// contract; it stays on the record afterwards, as history.
	Stuck *Stuck `json:"stuck,omitempty"`
	// Stop is its client's kill or suspend of the running contract, as
	// the exchange heard it; nil if none.
	Stop *Stop `json:"stop,omitempty"`
}

// Stop is a client's kill or suspend of a running contract: Reason
// (killed or suspended), At, when the exchange heard it, by its own
// clock, and By, At plus the exchange's stop grace. What the exchange
// believes of the job ends at By: no reading counts time past it, and
// the contract settles by then on its last reading, for Reason, whether
// or not its server stopped the job (docs/protocol.md, "suspend and
// kill").
type Stop struct {
	Reason Reason    `json:"reason"`
	At     time.Time `json:"at"`
	By     time.Time `json:"by"`
}

// Signed is a message exactly as a server sent it, and the server's
// signature of those bytes (package signing).
type Signed struct {
	Body []byte `json:"body"` // base64 in JSON: the bytes signed, unchanged
	Sig  string `json:"sig"`
}

// Stuck records an exchange's failures to settle or void a contract. The
// sweep tries again at Retry, backing off, and ends the contract by a
// fixed rule (ReasonExpired) once it has been stuck too long.
type Stuck struct {
	Since    time.Time `json:"since"`    // the first failure
	Attempts int       `json:"attempts"` // failures so far
	Retry    time.Time `json:"retry"`    // not tried again before then
	Error    string    `json:"error"`    // the last failure
}

// Clone is a copy of c that shares nothing a change of state writes into:
// Reading, Stuck, Stop and the slices are copied. Terms and the signed
// messages are never changed in place, only replaced, and stay shared.
func (c *Contract) Clone() Contract {
	out := *c
	if c.Reading != nil {
		r := *c.Reading
		out.Reading = &r
	}
	if c.Stuck != nil {
		st := *c.Stuck
		out.Stuck = &st
	}
	if c.Stop != nil {
		st := *c.Stop
		out.Stop = &st
	}
	out.GPUs = slices.Clone(c.GPUs)
	out.CapHolds = slices.Clone(c.CapHolds)
	out.SpendHolds = slices.Clone(c.SpendHolds)
	return out
}
