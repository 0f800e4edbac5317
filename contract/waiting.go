package contract

import (
	"time"

	"github.com/shopspring/decimal"
)

// Waiting is an offer waiting in the exchange's book: no server accepted
// it when it was made, and it said it would wait. When GPUs of its class
// free up it is offered again, best price at full use first, then the
// earliest; the first accept makes it contract ID. No money is held for
// it while it waits: the escrow is made at the match, from the balance
// then.
type Waiting struct {
	// ID is the contract it becomes: the id its request names.
	ID        string `json:"id"`
	Client    string `json:"client"`
	RequestID string `json:"request_id"`
	Terms     Terms  `json:"terms"`
	Resumes   string `json:"resumes,omitempty"`
	// Price is what the terms are sure to pay per GPU-second
	// (Terms.SurePrice: the least of the price at no use and the
	// prepayment spread over the GPUs for the time limit), at the
	// currency's scale plus six places: what orders the book, highest
	// first.
	Price    decimal.Decimal `json:"price"`
	QueuedAt time.Time       `json:"queued_at"`
	// Until is when it leaves the book unmatched (expired).
	Until time.Time `json:"until"`
	// Ahead is how many waiting offers of its currency are offered to
	// servers before it, as the book stood when it was read.
	Ahead int `json:"ahead"`
	// Left says why it left the book without a contract, once it has.
	Left Left `json:"left,omitempty"`
}

// Left says why a waiting offer left the book without becoming a
// contract.
type Left string

const (
	LeftCancelled Left = "cancelled"          // its client cancelled it
	LeftExpired   Left = "expired"            // its wait ended unmatched
	LeftUnpaid    Left = "insufficient_funds" // at a match, the wallet could not pay its prepayment
	LeftCapped    Left = "cap_exceeded"       // at a match, a cap of its client's refused it
	LeftInvalid   Left = "invalid"            // at a match, its terms were no longer valid (a start passed)
	LeftOutbid    Left = "outbid"             // the book was full, and an offer sure to pay more took its place
)
