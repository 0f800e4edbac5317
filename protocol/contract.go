package protocol

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// ContractView is a contract as its parties see it: the client that pays, in
// every reply and event about it, and the server that runs it, in the
// start and the reply to a started report. It is the exchange's record
// (contract.Contract) less what is the exchange's own: the ledger holds on
// the caps above the client (which name its project and organisation),
// the sweep's clock, and the errors of a stuck settlement.
// docs/protocol.md ("contract") says what each field promises.
type ContractView struct {
	ID     string          `json:"id"`
	Client string          `json:"client"`
	Server string          `json:"server"`
	Terms  contract.Terms  `json:"terms"`
	State  contract.State  `json:"state"`
	Reason contract.Reason `json:"reason,omitempty"`
	// Resumes names the suspended contract whose job this one continues.
	Resumes string `json:"resumes,omitempty"`
	// GPUs are the server's device indexes the job was given.
	GPUs  []int          `json:"gpus,omitempty"`
	Meter contract.Meter `json:"meter,omitempty"`
	// Image is the digest of the container image the job ran, as its
	// server resolved the terms' reference at the start.
	Image string `json:"image,omitempty"`
	// Model is the model of the GPUs the job got, as its server said at
	// the start.
	Model string `json:"model,omitempty"`

	QueuedAt      time.Time `json:"queued_at,omitzero"`
	AcceptedAt    time.Time `json:"accepted_at"`
	StartDeadline time.Time `json:"start_deadline"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	SettledAt     time.Time `json:"settled_at,omitzero"`

	Reading      *contract.Reading `json:"reading,omitempty"`
	Signed       *contract.Signed  `json:"signed,omitempty"`
	AcceptSigned *contract.Signed  `json:"accept_signed,omitempty"`
	Charge       decimal.Decimal   `json:"charge"`
	Refund       decimal.Decimal   `json:"refund"`

	// Stop is the client's kill or suspend of the running contract, when
	// the exchange heard it, and by when the contract settles at the
	// latest, whether or not its server stops the job.
	Stop *contract.Stop `json:"stop,omitempty"`

	// SettlementDelayedSince is set while the exchange tries and fails to
	// settle or void the contract (its record is stuck): since when. It
	// ends, settled or voided, by the fixed rule within the stuck limit.
	// The failures themselves are the exchange's and stay on its record.
	SettlementDelayedSince time.Time `json:"settlement_delayed_since,omitzero"`
}

// View is the record c as its parties see it.
func View(c contract.Contract) ContractView {
	v := ContractView{
		ID: c.ID, Client: c.Client, Server: c.Server, Terms: c.Terms, State: c.State, Reason: c.Reason,
		Resumes: c.Resumes, GPUs: c.GPUs, Meter: c.Meter, Image: c.Image, Model: c.Model,
		QueuedAt: c.QueuedAt, AcceptedAt: c.AcceptedAt, StartDeadline: c.StartDeadline,
		StartedAt: c.StartedAt, SettledAt: c.SettledAt,
		Reading: c.Reading, Signed: c.Signed, AcceptSigned: c.AcceptSigned,
		Charge: c.Charge, Refund: c.Refund, Stop: c.Stop,
	}
	if c.Stuck != nil && c.HoldsEscrow() {
		v.SettlementDelayedSince = c.Stuck.Since
	}
	return v
}

// Views is View of each record of cs.
func Views(cs []contract.Contract) []ContractView {
	out := make([]ContractView, len(cs))
	for i, c := range cs {
		out[i] = View(c)
	}
	return out
}

// ContractChange is what an event says of its contract: the id, and the
// fields the event changed; a field left out did not change. The accepted
// event carries every field of Contract but SettlementDelayedSince
// (Changed says which fields each event type carries, and
// docs/protocol.md lists them). ContractView.Apply merges one into a contract.
type ContractChange struct {
	ID            string            `json:"id"`
	Client        string            `json:"client,omitempty"`
	Server        string            `json:"server,omitempty"`
	Terms         contract.Terms    `json:"terms,omitzero"`
	State         contract.State    `json:"state,omitempty"`
	Reason        contract.Reason   `json:"reason,omitempty"`
	Resumes       string            `json:"resumes,omitempty"`
	GPUs          []int             `json:"gpus,omitempty"`
	Meter         contract.Meter    `json:"meter,omitempty"`
	Image         string            `json:"image,omitempty"`
	Model         string            `json:"model,omitempty"`
	QueuedAt      time.Time         `json:"queued_at,omitzero"`
	AcceptedAt    time.Time         `json:"accepted_at,omitzero"`
	StartDeadline time.Time         `json:"start_deadline,omitzero"`
	StartedAt     time.Time         `json:"started_at,omitzero"`
	SettledAt     time.Time         `json:"settled_at,omitzero"`
	Reading       *contract.Reading `json:"reading,omitempty"`
	Signed        *contract.Signed  `json:"signed,omitempty"`
	AcceptSigned  *contract.Signed  `json:"accept_signed,omitempty"`
	Charge        *decimal.Decimal  `json:"charge,omitempty"`
	Refund        *decimal.Decimal  `json:"refund,omitempty"`
}

// Changed is what an event of type typ says of record c:
//
//	accepted           the whole contract (every field of Contract but settlement_delayed_since)
//	started            id, state, started_at, gpus, meter, image, model
//	reading            id, state, reading, signed
//	settled, voided    id, state, reason, settled_at, reading, signed, charge, refund
//	spend_warning      id, state
//
// It copies no more of c than the event carries, so that an event costs
// what it says, not the whole record.
func Changed(typ EventType, c *contract.Contract) *ContractChange {
	ch := &ContractChange{ID: c.ID, State: c.State}
	switch typ {
	case EventAccepted:
		ch.Client, ch.Server, ch.Terms, ch.Reason, ch.Resumes = c.Client, c.Server, c.Terms, c.Reason, c.Resumes
		ch.GPUs, ch.Meter, ch.Image, ch.Model, ch.QueuedAt, ch.AcceptedAt, ch.StartDeadline = c.GPUs, c.Meter, c.Image, c.Model, c.QueuedAt, c.AcceptedAt, c.StartDeadline
		ch.StartedAt, ch.SettledAt, ch.Reading, ch.Signed, ch.AcceptSigned = c.StartedAt, c.SettledAt, c.Reading, c.Signed, c.AcceptSigned
		ch.Charge, ch.Refund = &c.Charge, &c.Refund
	case EventStarted:
		ch.StartedAt, ch.GPUs, ch.Meter, ch.Image, ch.Model = c.StartedAt, c.GPUs, c.Meter, c.Image, c.Model
	case EventReading:
		ch.Reading, ch.Signed = c.Reading, c.Signed
	case EventSettled, EventVoided:
		ch.Reason, ch.SettledAt, ch.Reading, ch.Signed = c.Reason, c.SettledAt, c.Reading, c.Signed
		ch.Charge, ch.Refund = &c.Charge, &c.Refund
	}
	return ch
}

// DueSoFar is what the contract owes by its last reading, at scale
// (contract.DueSoFar).
func (c ContractView) DueSoFar(scale int32) (decimal.Decimal, bool) {
	return contract.DueSoFar(c.Terms, c.State, c.Reading, scale)
}

// Apply merges an event's change into the contract, c having the same id
// (or none yet: then c becomes what the change says). Events may arrive
// out of order, so a change moves nothing back: the state only forward
// (accepted, running, then settled or voided), the reading only to a
// later one (with its signature). A contract that ends is no longer
// delayed.
func (c *ContractView) Apply(ch ContractChange) {
	if c.ID == "" {
		c.ID = ch.ID
	}
	setString(&c.Client, ch.Client)
	setString(&c.Server, ch.Server)
	setString(&c.Resumes, ch.Resumes)
	if !ch.Terms.IsZero() {
		c.Terms = ch.Terms
	}
	if ch.State != "" && ch.State.After(c.State) {
		c.State = ch.State
	}
	if ch.Reason != "" {
		c.Reason = ch.Reason
	}
	if ch.GPUs != nil {
		c.GPUs = ch.GPUs
	}
	if ch.Meter != "" {
		c.Meter = ch.Meter
	}
	setString(&c.Image, ch.Image)
	setString(&c.Model, ch.Model)
	for _, t := range []struct{ to, from *time.Time }{
		{&c.QueuedAt, &ch.QueuedAt}, {&c.AcceptedAt, &ch.AcceptedAt}, {&c.StartDeadline, &ch.StartDeadline},
		{&c.StartedAt, &ch.StartedAt}, {&c.SettledAt, &ch.SettledAt},
	} {
		if !t.from.IsZero() {
			*t.to = *t.from
		}
	}
	if r := ch.Reading; r != nil && (c.Reading == nil || r.Seq > c.Reading.Seq) {
		c.Reading, c.Signed = r, ch.Signed
	}
	if ch.AcceptSigned != nil {
		c.AcceptSigned = ch.AcceptSigned
	}
	if ch.Charge != nil {
		c.Charge = *ch.Charge
	}
	if ch.Refund != nil {
		c.Refund = *ch.Refund
	}
	if c.State.Ended() {
		c.SettlementDelayedSince = time.Time{}
	}
}

func setString(to *string, from string) {
	if from != "" {
		*to = from
	}
}
