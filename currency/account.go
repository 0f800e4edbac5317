package currency

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bourse/bourse"
)

// Kind is what an account is for. Values are stored and cross the wire.
type Kind string

const (
	// Issuance is the currency's source of money, one per currency and the only
	// account allowed below zero: its balance is minus the money supply.
	Issuance Kind = "issuance"
	// Wallet is a client's money, optionally grouped under a parent wallet
	// (organisation → project).
	Wallet Kind = "wallet"
	// Escrow holds one hold's money between Hold and its resolution.
	Escrow Kind = "escrow"
	// Revenue collects what a server (or the administration) is paid.
	Revenue Kind = "revenue"
)

func (k Kind) valid() bool {
	switch k {
	case Issuance, Wallet, Escrow, Revenue:
		return true
	}
	return false
}

// AccountID names an account. IDs are chosen by their owners through the
// constructors below, so that an exchange can find a client's wallet without
// a lookup: "wallet/GPU/alice".
type AccountID string

// MaxIDLen bounds account, hold and owner names and idempotency keys.
const MaxIDLen = 200

// IssuanceID is the issuance account of currency c.
func IssuanceID(c Code) AccountID { return AccountID("issuance/" + string(c)) }

// WalletID is owner's wallet in currency c.
func WalletID(c Code, owner string) AccountID { return AccountID("wallet/" + string(c) + "/" + owner) }

// RevenueID is owner's revenue account in currency c.
func RevenueID(c Code, owner string) AccountID {
	return AccountID("revenue/" + string(c) + "/" + owner)
}

// EscrowID is the account that holds hold h's money.
func EscrowID(h HoldID) AccountID { return AccountID("escrow/" + string(h)) }

// Currency is the currency an issuance, wallet or revenue account's ID
// names (kind/CODE[/owner]); an escrow's names none, nor does anything
// else.
func (id AccountID) Currency() (Code, bool) {
	kind, rest, ok := strings.Cut(string(id), "/")
	if !ok {
		return "", false
	}
	code, owner, hasOwner := strings.Cut(rest, "/")
	switch {
	case code == "":
		return "", false
	case Kind(kind) == Issuance && !hasOwner:
		return Code(code), true
	case (Kind(kind) == Wallet || Kind(kind) == Revenue) && hasOwner && owner != "":
		return Code(code), true
	}
	return "", false
}

// Account is one side of every movement.
type Account struct {
	ID       AccountID `json:"id"`
	Currency Code      `json:"currency"`
	Kind     Kind      `json:"kind"`
	// Parent groups wallets (a project's wallet under its organisation's).
	// Money does not flow through it; it is for reports and statements.
	Parent  AccountID `json:"parent,omitempty"`
	Created time.Time `json:"created"`
}

// same reports whether a and b describe the same account, ignoring Created.
func (a Account) same(b Account) bool {
	return a.ID == b.ID && a.Currency == b.Currency && a.Kind == b.Kind && a.Parent == b.Parent
}

// validate checks an account that a caller asks to open. Escrow accounts
// are opened only by Hold, and issuance only by CreateCurrency.
func (a Account) validate(op string) error {
	if err := checkName(op, "id", string(a.ID)); err != nil {
		return err
	}
	if !a.Kind.valid() {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "kind", Message: "unknown account kind " + quote(string(a.Kind))}
	}
	if a.Parent != "" && a.Kind != Wallet {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "parent", Message: "only wallets have parents"}
	}
	if a.Parent == a.ID {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "parent", Message: "an account cannot be its own parent"}
	}
	return nil
}

// MaxMemoLen bounds a memo, in bytes.
const MaxMemoLen = 500

// checkMemo accepts valid UTF-8 without NUL, up to MaxMemoLen bytes: what
// every database stores as text.
func checkMemo(memo string) error {
	if len(memo) > MaxMemoLen || !utf8.ValidString(memo) || strings.ContainsRune(memo, 0) {
		return &bourse.Error{Code: bourse.EInvalid, Field: "memo", Message: "a memo is valid UTF-8 without NUL, at most 500 bytes"}
	}
	return nil
}

// checkName accepts printable names without spaces, at most MaxIDLen bytes.
func checkName(op, field, s string) error {
	if s == "" {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: "must not be empty"}
	}
	if len(s) > MaxIDLen {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: "longer than 200 bytes"}
	}
	if strings.IndexFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '\uFFFD' }) >= 0 {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: "contains spaces or control characters: " + quote(s)}
	}
	return nil
}
