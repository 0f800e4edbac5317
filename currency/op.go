package currency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Op is one ledger operation under a caller-chosen idempotency key: the same
// key with the same content returns the first result, the same key with other
// content is an EIdempotencyConflict, and a key whose first attempt failed
// for a business reason (insufficient funds, say) stays failed.
//
// The operations are Transfer, Reserve, Capture, Void and Expire.
type Op interface {
	IdempotencyKey() string
	// fingerprint is a canonical form of the content, compared on replay.
	fingerprint() string
}

// Transfer moves Amount from one account to another of the same currency.
// Minting is a transfer out of the issuance account; escrow accounts move
// only through holds.
type Transfer struct {
	Key    string          `json:"key"`
	From   AccountID       `json:"from"`
	To     AccountID       `json:"to"`
	Amount decimal.Decimal `json:"amount"`
	Memo   string          `json:"memo,omitempty"`
}

// Reserve opens hold Hold: Amount moves from the wallet From into the hold's
// escrow account, checked against From's balance now. Deadline is when Expire
// may void it (for a contract: its start deadline, or its end plus grace).
type Reserve struct {
	Key      string          `json:"key"`
	Hold     HoldID          `json:"hold"`
	From     AccountID       `json:"from"`
	Amount   decimal.Decimal `json:"amount"`
	Deadline time.Time       `json:"deadline"`
	Memo     string          `json:"memo,omitempty"`
}

// Capture resolves an open hold: Amount (which may be zero) goes to To, the
// rest back to the wallet that funded it.
type Capture struct {
	Key    string          `json:"key"`
	Hold   HoldID          `json:"hold"`
	To     AccountID       `json:"to"`
	Amount decimal.Decimal `json:"amount"`
	Memo   string          `json:"memo,omitempty"`
}

// Void resolves an open hold by returning all of it to its wallet.
type Void struct {
	Key  string `json:"key"`
	Hold HoldID `json:"hold"`
	Memo string `json:"memo,omitempty"`
}

// Expire voids an open hold whose deadline has passed by the ledger's clock;
// before then it fails with EHoldNotDue (and, like any failure, stays failed
// under its key: use a fresh key to try again later).
type Expire struct {
	Key  string `json:"key"`
	Hold HoldID `json:"hold"`
}

func (o Transfer) IdempotencyKey() string { return o.Key }
func (o Reserve) IdempotencyKey() string  { return o.Key }
func (o Capture) IdempotencyKey() string  { return o.Key }
func (o Void) IdempotencyKey() string     { return o.Key }
func (o Expire) IdempotencyKey() string   { return o.Key }

// Fingerprints hash the fields joined by a separator that names cannot
// contain (checkName forbids control characters), with decimals in canonical
// form so that "1.50" and "1.5" are the same request. A hash keeps stored
// fingerprints short and storable whatever a memo holds.
func fp(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return hex.EncodeToString(h[:16])
}

func (o Transfer) fingerprint() string {
	return fp("transfer", string(o.From), string(o.To), o.Amount.String(), o.Memo)
}

func (o Reserve) fingerprint() string {
	return fp("reserve", string(o.Hold), string(o.From), o.Amount.String(),
		fmt.Sprint(o.Deadline.UTC().UnixNano()), o.Memo)
}

func (o Capture) fingerprint() string {
	return fp("capture", string(o.Hold), string(o.To), o.Amount.String(), o.Memo)
}

func (o Void) fingerprint() string   { return fp("void", string(o.Hold), o.Memo) }
func (o Expire) fingerprint() string { return fp("expire", string(o.Hold)) }

// opName is the Result.Op of each operation.
func opName(op Op) string {
	switch op.(type) {
	case Transfer:
		return "transfer"
	case Reserve:
		return "reserve"
	case Capture:
		return "capture"
	case Void:
		return "void"
	case Expire:
		return "expire"
	}
	return "unknown"
}
