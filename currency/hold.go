package currency

import (
	"time"

	"github.com/shopspring/decimal"
)

// HoldID names a hold; the exchange uses the contract's ID.
type HoldID string

// HoldStatus is where a hold is in its life. A hold resolves exactly once.
type HoldStatus string

const (
	HoldOpen     HoldStatus = "open"
	HoldCaptured HoldStatus = "captured"
	HoldVoided   HoldStatus = "voided"
	HoldExpired  HoldStatus = "expired"
)

// Hold is a two-phase reservation of a wallet's money in an escrow account.
// Once resolved, Captured + Released = Amount and the escrow account is empty.
type Hold struct {
	ID       HoldID          `json:"id"`
	Currency Code            `json:"currency"`
	From     AccountID       `json:"from"`
	Amount   decimal.Decimal `json:"amount"`
	Status   HoldStatus      `json:"status"`
	Deadline time.Time       `json:"deadline"`
	// Set on resolution.
	CapturedTo AccountID       `json:"captured_to,omitempty"`
	Captured   decimal.Decimal `json:"captured"`
	Released   decimal.Decimal `json:"released"`
	Created    time.Time       `json:"created"`
	Resolved   time.Time       `json:"resolved,omitzero"`
}

// Escrow is the account that holds the hold's money.
func (h Hold) Escrow() AccountID { return EscrowID(h.ID) }
