package currency

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
)

// Movement is one posted double-entry transfer: Amount leaves From and
// arrives in To, both of Currency. Every change of any balance is a Movement.
type Movement struct {
	// ID is derived from what may happen only once: "t/KEY" for a transfer, "x/KEY/out" and "x/KEY/in" for the legs of an exchange,
	// "h/HOLD/reserve" and "h/HOLD/resolve/N" for holds. Backends keep IDs
	// unique, a second guard against applying a key or resolving a hold twice.
	ID       string          `json:"id"`
	Key      string          `json:"key"`
	Currency Code            `json:"currency"`
	From     AccountID       `json:"from"`
	To       AccountID       `json:"to"`
	Amount   decimal.Decimal `json:"amount"`
	Hold     HoldID          `json:"hold,omitempty"`
	Memo     string          `json:"memo,omitempty"`
	At       time.Time       `json:"at"`
}

// Result is what an operation did, stored under its key and returned again
// on replay. Err is a business failure that the key keeps for good.
type Result struct {
	Key       string        `json:"key"`
	Op        string        `json:"op"`
	Movements []Movement    `json:"movements,omitempty"`
	Hold      *Hold         `json:"hold,omitempty"`
	Err       *bourse.Error `json:"error,omitempty"`
}

// Balance is an account's money: Available is its own balance, Held the sum
// of its open holds (money already moved to their escrow accounts).
type Balance struct {
	Account   AccountID       `json:"account"`
	Currency  Code            `json:"currency"`
	Available decimal.Decimal `json:"available"`
	Held      decimal.Decimal `json:"held"`
}

// Entry is one line of an account's statement: one side of a Movement.
// Seq counts the account's entries from 1; Balance is the running balance
// after this entry.
type Entry struct {
	Account      AccountID       `json:"account"`
	Seq          int64           `json:"seq"`
	Movement     string          `json:"movement"`
	Key          string          `json:"key"`
	Counterparty AccountID       `json:"counterparty"`
	Amount       decimal.Decimal `json:"amount"` // positive in, negative out
	Balance      decimal.Decimal `json:"balance"`
	Hold         HoldID          `json:"hold,omitempty"`
	Memo         string          `json:"memo,omitempty"`
	At           time.Time       `json:"at"`
}
