package currency

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Op is one ledger operation under a caller-chosen idempotency key: the same
// key with the same operation returns the first result, the same key with
// another operation is an EIdempotencyConflict naming the first field that
// differs, and a key whose first attempt failed for a business reason
// (insufficient funds, say) stays failed.
//
// Two operations are the same when their kind and the fields that decide
// what moves where are equal (see content); a memo is a note for the
// statement and never makes two operations different.
//
// The operations are Transfer, Reserve, Capture, Void, Expire and Convert.
type Op interface {
	IdempotencyKey() string
	// content is what makes the operation what it is, compared on replay.
	content() content
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
	// UpTo makes Amount a most: the transfer moves what From has of it
	// (its balance, not what it holds), decided in the transaction that
	// moves it, and nothing where From has nothing (a Result without
	// movements). So "take back what is there" is one operation under one
	// key, whatever From spends meanwhile: two callers that ask the same
	// get the same answer, and none finds the key failed for want of
	// funds. From the issuance account it moves all of Amount.
	UpTo bool `json:"up_to,omitempty"`
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
	// IfOpen makes a hold resolved already (or forgotten, or never made)
	// no failure: the capture then does nothing. Whether the hold is
	// open is decided in the transaction that applies it, so a caller
	// releasing holds that a sweep may have expired meanwhile need not
	// read them first.
	IfOpen bool `json:"if_open,omitempty"`
}

// Void resolves an open hold by returning all of it to its wallet.
type Void struct {
	Key  string `json:"key"`
	Hold HoldID `json:"hold"`
	Memo string `json:"memo,omitempty"`
	// IfOpen: as Capture's.
	IfOpen bool `json:"if_open,omitempty"`
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

// content is an operation's kind and the fields that make it what it is,
// in a fixed order: for a transfer from, to and amount (and up_to where
// set); for a reserve hold, from, amount and deadline; for a capture hold,
// to and amount; for a void or an expire the hold (and if_open, for a
// capture or a void, where set). Decimals are in canonical form, so that
// "1.50" and "1.5" are the same amount, and times are UTC nanoseconds.
type content struct {
	kind   string
	fields []field
	// memo is not content; it is kept only to compare with fingerprints
	// written before the memo was left out of them (legacyFingerprint).
	memo    string
	hasMemo bool // whether such a fingerprint hashed a memo (all but expire)
}

type field struct{ name, value string }

func (o Transfer) content() content {
	c := content{kind: "transfer", memo: o.Memo, hasMemo: true, fields: []field{
		{"from", string(o.From)}, {"to", string(o.To)}, {"amount", o.Amount.String()}}}
	if o.UpTo {
		// Only where set, so that the fingerprints of plain transfers
		// stored before it existed still match.
		c.fields = append(c.fields, field{"up_to", "true"})
	}
	return c
}

func (o Reserve) content() content {
	return content{kind: "reserve", memo: o.Memo, hasMemo: true, fields: []field{
		{"hold", string(o.Hold)}, {"from", string(o.From)}, {"amount", o.Amount.String()},
		{"deadline", fmt.Sprint(o.Deadline.UTC().UnixNano())}}}
}

func (o Capture) content() content {
	return ifOpen(content{kind: "capture", memo: o.Memo, hasMemo: true, fields: []field{
		{"hold", string(o.Hold)}, {"to", string(o.To)}, {"amount", o.Amount.String()}}}, o.IfOpen)
}

func (o Void) content() content {
	return ifOpen(content{kind: "void", memo: o.Memo, hasMemo: true, fields: []field{{"hold", string(o.Hold)}}}, o.IfOpen)
}

// ifOpen adds the if_open field where it is set, and only there, so that
// the fingerprints stored before it existed still match.
func ifOpen(c content, set bool) content {
	if set {
		c.fields = append(c.fields, field{"if_open", "true"})
	}
	return c
}

func (o Expire) content() content {
	return content{kind: "expire", fields: []field{{"hold", string(o.Hold)}}}
}

// A fingerprint is what the ledger stores beside a key's result to
// recognise a replay: "v2", the kind, then name:hash for each field, joined
// by spaces (which names, kinds and hashes never contain):
//
//	v2 transfer from:Xq0… to:3vP… amount:kT9…
//
// A hash is the first 16 bytes of the field value's SHA-256 in unpadded
// base64url, 22 characters, so a fingerprint stays short whatever the
// fields hold, and a comparison can still tell which field differs.
const fingerprintVersion = "v2"

func (c content) fingerprint() string {
	var b strings.Builder
	b.WriteString(fingerprintVersion + " " + c.kind)
	for _, f := range c.fields {
		b.WriteString(" " + f.name + ":" + fieldHash(f.value))
	}
	return b.String()
}

func fieldHash(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// legacyFingerprint is the fingerprint ledgers stored before v2: one hash
// of the kind, the fields and the memo (none for expire) joined by a
// separator names cannot contain, as 32 hex digits. Rows written then are
// still compared with it.
func (c content) legacyFingerprint(memo string) string {
	parts := []string{c.kind}
	for _, f := range c.fields {
		parts = append(parts, f.value)
	}
	if c.hasMemo {
		parts = append(parts, memo)
	}
	h := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return hex.EncodeToString(h[:16])
}

// conflict compares an operation with the fingerprint and the result stored
// under its key: nil when they are the same operation, else the
// EIdempotencyConflict that names the first field that differs ("key" when
// the kind differs, or when an old fingerprint can say only that something
// does).
func conflict(c content, key string, stored Result, print string) *bourse.Error {
	fail := func(field, format string, args ...any) *bourse.Error {
		return &bourse.Error{Code: bourse.EIdempotencyConflict, Op: "currency." + c.kind, Field: field,
			Message: fmt.Sprintf("key %q was used before for a ", key) + fmt.Sprintf(format, args...)}
	}
	parts := strings.Split(print, " ")
	if parts[0] != fingerprintVersion || len(parts) < 2 {
		// Written before v2, memo included: the memo the first operation
		// had is in its movements, if it made any.
		if print == c.legacyFingerprint(c.memo) {
			return nil
		}
		if len(stored.Movements) > 0 && print == c.legacyFingerprint(stored.Movements[0].Memo) {
			return nil
		}
		return fail("key", "%s with different content", stored.Op)
	}
	if kind := parts[1]; kind != c.kind {
		return fail("key", "%s, not a %s", kind, c.kind)
	}
	had := parts[2:]
	for i, f := range c.fields {
		if i >= len(had) || had[i] != f.name+":"+fieldHash(f.value) {
			return fail(f.name, "%s with another %s", c.kind, f.name)
		}
	}
	if len(had) != len(c.fields) {
		return fail("key", "%s with different content", c.kind)
	}
	return nil
}

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
	case Convert:
		return "exchange"
	}
	return "unknown"
}

// Grant is the transfer that mints amount into owner's wallet: money out
// of the currency's issuance account, the only account that may go below
// zero, so that the supply grows by amount. An administrator's grant, a
// demo's budget and a simulation's endowment are all this one operation.
func Grant(cur Code, owner string, amount decimal.Decimal, key, memo string) Transfer {
	return Transfer{Key: key, From: IssuanceID(cur), To: WalletID(cur, owner), Amount: amount, Memo: memo}
}
