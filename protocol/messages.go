package protocol

import (
	"cmp"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
)

// MaxMessage bounds every request body the exchange reads.
const MaxMessage = 64 << 10

// MaxReading is the most bytes a usage reading may have: the usage stream
// refuses larger ones. A reading is a few hundred bytes; the rest is room
// for what readings may come to carry (a server's signature).
const MaxReading = 8 << 10

// OfferRequest is a client's offer (bourse.v1.client.<c>.offer). A retried
// request with the same RequestID returns the first answer's contract.
// Terms.Client may be empty; it is the sender, and another name is refused.
type OfferRequest struct {
	RequestID string         `json:"request_id"`
	Terms     contract.Terms `json:"terms"`
	// Counter takes a counter-offer: its ID, with Terms equal to its terms
	// and Terms.Server its server.
	Counter string `json:"counter,omitempty"`
	// Resumes continues a suspended contract's job under new terms.
	Resumes string `json:"resumes,omitempty"`
	// Wait, if set, is how long the offer may wait in the book when no
	// server accepts it at once (at most MaxWait): the reply is then
	// Queued, and a contract is made when GPUs free up and a server
	// accepts it (an accepted event tells).
	Wait contract.Duration `json:"wait,omitempty"`
}

// MaxWait is the longest an offer may wait in the book.
const MaxWait = 7 * 24 * time.Hour

// OfferReply carries a contract, or, when no server accepted, every
// counter-offer the matching servers made.
type OfferReply struct {
	Contract *ContractView      `json:"contract,omitempty"`
	Counters []contract.Counter `json:"counters,omitempty"`
	// Rejections lists servers that rejected without a counter, and why.
	Rejections []Rejection `json:"rejections,omitempty"`
	// Queued is the offer as it waits in the book, for an offer that
	// said it would wait and that no server accepted at once; Counters
	// and Rejections are then the servers' answers before it was queued.
	Queued *contract.Waiting `json:"queued,omitempty"`
}

// Rejection is a server's no. Code, where there is one, says that the
// server refused the offer's terms rather than its price or for want of
// free GPUs (invalid_offer, permission_denied, …); the reason then starts
// with it too, as it always has.
type Rejection struct {
	Server string      `json:"server"`
	Reason string      `json:"reason"`
	Code   bourse.Code `json:"code,omitempty"`
}

// ControlRequest suspends or kills a contract (bourse.v1.client.<c>.suspend
// or .kill). It is idempotent: a stopped contract answers with its state.
type ControlRequest struct {
	RequestID string `json:"request_id"`
	Contract  string `json:"contract"`
}

// ContractRequest reads one contract (bourse.v1.client.<c>.contract).
type ContractRequest struct {
	Contract string `json:"contract"`
}

// ContractsRequest lists the client's contracts, newest first.
type ContractsRequest struct {
	Limit int `json:"limit,omitempty"`
}

// ContractsReply is the answer to a ContractsRequest.
type ContractsReply struct {
	Contracts []ContractView `json:"contracts"`
}

// BalanceRequest reads the sender's wallet in a currency.
type BalanceRequest struct {
	Currency string `json:"currency"`
}

// BalanceReply is the sender's wallet in a currency, and that currency's
// scale: every amount of the currency is a multiple of 10^-Scale, so a
// prepayment may have at most Scale decimal places, and a client writes
// amounts with Scale places ("19.2" is 19.20 CRED at scale 2). Currency
// (in the embedded Balance) is the currency's code.
type BalanceReply struct {
	currency.Balance
	Scale int32 `json:"scale"`
	// Waiting counts the sender's waiting offers in the currency and sums
	// their prepayments: money not held (it is in available), which each
	// needs at its match, when it is escrowed from the balance then.
	Waiting *WaitingSum `json:"waiting,omitempty"`
}

// WaitingSum is what a client's waiting offers in a currency will need.
type WaitingSum struct {
	Offers      int             `json:"offers"`
	Prepayments decimal.Decimal `json:"prepayments"`
}

// CancelRequest takes a waiting offer out of the book
// (bourse.v1.client.<c>.cancel); the reply is the waiting offer, left
// cancelled.
type CancelRequest struct {
	Offer string `json:"offer"`
}

// WaitingRequest lists the sender's waiting offers
// (bourse.v1.client.<c>.waiting), best price first.
type WaitingRequest struct {
	Currency string `json:"currency,omitempty"`
}

// WaitingReply is the answer to a WaitingRequest.
type WaitingReply struct {
	Offers []contract.Waiting `json:"offers"`
}

// StatementRequest pages through the sender's wallet statement.
type StatementRequest struct {
	Currency string `json:"currency"`
	After    int64  `json:"after,omitempty"`
	Limit    int    `json:"limit,omitempty"`
}

// StatementReply is one page of a statement.
type StatementReply struct {
	Entries []currency.Entry `json:"entries"`
}

// Event tells a client what happened to one of its contracts, on
// bourse.v1.deliver.<client>.event. Events are notifications; the contract
// record is the truth.
type Event struct {
	Type EventType `json:"type"`
	// Contract is what changed of the contract: the whole of it in the
	// accepted event, its id and the fields the event changed in the
	// others (Changed); absent in the events of a waiting offer
	// (countered, left_book), which carry Waiting. ContractView.Apply merges
	// it into the contract as the client holds it.
	Contract *ContractChange   `json:"contract,omitempty"`
	Waiting  *contract.Waiting `json:"waiting,omitempty"`
	// Counters are the counter-offers servers made a waiting offer when
	// it was offered to them (countered events): take one as from an
	// offer's reply.
	Counters []contract.Counter `json:"counters,omitempty"`
	// Due is the running charge of the reading, for reading events.
	Due decimal.Decimal `json:"due,omitzero"`
	// Warning says, for spend_warning events, which cap the contract took
	// past its warning share and how much of it is used.
	Warning string `json:"warning,omitempty"`
	// Message says in words, for left_book events, why the offer left.
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// EventType names an Event.
type EventType string

const (
	EventAccepted EventType = "accepted"
	EventStarted  EventType = "started"
	EventReading  EventType = "reading"
	EventSettled  EventType = "settled"
	EventVoided   EventType = "voided"
	// EventSpendWarning: the contract took a spend cap past the share at
	// which its administrators want the client warned (e.g. 80%).
	EventSpendWarning EventType = "spend_warning"
	// EventCountered: a waiting offer, offered to servers when GPUs
	// freed up, was countered; it waits on.
	EventCountered EventType = "countered"
	// EventLeftBook: a waiting offer left the book without a contract
	// (Waiting.Left says why).
	EventLeftBook EventType = "left_book"
)

// Hello registers a server (bourse.v1.server.<s>.hello); the exchange
// answers with HelloReply. Heartbeats carry the same fields.
type Hello struct {
	Currency string `json:"currency"`
	// Scale is the decimal places the server prices the currency at;
	// the exchange refuses a hello whose scale is not the ledger's (a
	// server older than it leaves it out).
	Scale *int32         `json:"scale,omitempty"`
	GPUs  []contract.GPU `json:"gpus"`
	Free  int            `json:"free"`
	// Running lists the contracts the server is running now.
	Running []string `json:"running,omitempty"`
	// Settling lists the contracts whose final reading the server holds
	// and the exchange has not given a receipt for (VerbReceipts): their
	// jobs ended, and the server is alive and saying so. Sent only to an
	// exchange whose hello reply says it gives receipts.
	Settling []string `json:"settling,omitempty"`
	Policy   string   `json:"policy,omitempty"`
	// Runs says what the server runs; nil from a server older than it,
	// which the exchange offers no program (contract.Runs.Refuses).
	Runs *Runs `json:"runs,omitempty"`
	// Ask is what the server would take now and soon; nil from a server
	// older than asks, which the exchange asks as it always has.
	Ask *Ask `json:"ask,omitempty"`
	// Heartbeat is the interval the server heartbeats at now, in a
	// heartbeat to an exchange whose hello reply set ChangeGap (one
	// older than pacing would refuse the field): the exchange tells it a
	// longer one as the fleet grows (DeliverPace), and keeps a server
	// live for three of them.
	Heartbeat contract.Duration `json:"heartbeat,omitempty"`
	At        time.Time         `json:"at"`
}

// HelloReply tells a server how often to speak.
type HelloReply struct {
	// Heartbeat is how often to heartbeat when nothing changes: longer
	// as the fleet grows (docs/protocol/server.md, heartbeats).
	Heartbeat contract.Duration `json:"heartbeat"`
	// ChangeGap is the least time between two heartbeats that changes of
	// the server's ask bring about, however long Heartbeat is. An
	// exchange that sets it paces heartbeats: it reads the interval a
	// heartbeat says (Hello.Heartbeat) and tells a longer one on
	// DeliverPace. An exchange older than it leaves it out, and a server
	// then waits a tenth of Heartbeat and says no interval.
	ChangeGap contract.Duration `json:"change_gap,omitempty"`
	// ReadingEvery is how often to publish a reading of each running
	// contract; a contract silent for ServerLostAfter is settled as lost.
	ReadingEvery    contract.Duration `json:"reading_every"`
	ServerLostAfter contract.Duration `json:"server_lost_after"`
	// Readings says that the usage stream takes readings messages
	// (bourse.v1.server.<s>.readings): a server sends one a reading
	// interval with all its running contracts' readings, rather than one
	// message per contract. An exchange older than them leaves it out.
	Readings bool `json:"readings,omitempty"`
	// Receipts says that the exchange gives receipts for readings
	// (VerbReceipts): a server keeps its final readings until one says the
	// exchange stored them, and lists their contracts in its heartbeats'
	// Settling meanwhile. An exchange older than receipts leaves it out,
	// and a server then forgets a reading once the usage stream has it.
	Receipts bool `json:"receipts,omitempty"`
}

// ServerOffer asks a server to decide (bourse.v1.deliver.<s>.offer).
type ServerOffer struct {
	Offer   string         `json:"offer"` // the exchange's id for this negotiation
	Terms   contract.Terms `json:"terms"`
	Counter string         `json:"counter,omitempty"`
}

// Decision is a server's answer to a ServerOffer. An accept claims the
// GPUs until Start or Cancel, or until ClaimFor passes.
type Decision struct {
	Accept   bool              `json:"accept"`
	ClaimFor contract.Duration `json:"claim_for,omitempty"`
	// DeprecatedHoldFor is ClaimFor as servers before claim_for wrote it
	// ("hold_for"): read, so that a server one release behind is still
	// understood, and never written by this one. Claim reads either.
	DeprecatedHoldFor contract.Duration  `json:"hold_for,omitempty"`
	Counters          []contract.Counter `json:"counters,omitempty"`
	Reason            string             `json:"reason,omitempty"`
	// Code is set when a rejection has a typed cause the client should see,
	// such as capacity_gone for a counter-offer whose GPUs were taken.
	Code bourse.Code `json:"code,omitempty"`
}

// Claim is how long an accept claims its GPUs: ClaimFor, or hold_for from
// a server one release behind.
func (d Decision) Claim() contract.Duration { return cmp.Or(d.ClaimFor, d.DeprecatedHoldFor) }

// Start tells a server to start an accepted contract
// (bourse.v1.deliver.<s>.start); it answers Started.
type Start struct {
	Offer    string       `json:"offer"`
	Contract ContractView `json:"contract"`
}

// Started is a server's report that a contract's job runs
// (the reply to Start, or bourse.v1.server.<s>.started).
//
// For a booking (terms with a future start_at) the reply to Start has
// Booked set: the server has reserved GPUs for the slot and starts the job
// at At; the contract stays accepted until the server reports the start on
// bourse.v1.server.<s>.started, without Booked.
type Started struct {
	Contract string    `json:"contract"`
	GPUs     []int     `json:"gpus"`
	At       time.Time `json:"at"`
	Booked   bool      `json:"booked,omitempty"`
	// Preparing, in the reply to Start, says that the server prepares
	// the job (pulls its image) before it starts it, and reports the
	// start on bourse.v1.server.<s>.started then, or the job's failure
	// by a final reading: the contract stays accepted meanwhile, its
	// start deadline moved out by the exchange's prepare bound.
	Preparing bool `json:"preparing,omitempty"`
	// Meter is how the server measures the job (contract.Meter); the
	// exchange records it on the contract.
	Meter contract.Meter `json:"meter,omitempty"`
	// Output is what the server will send of the job's output, at most
	// (contract.OutputCaps); the exchange records it on the contract and
	// relays nothing past it. A server that sends no output leaves it out.
	Output contract.OutputCaps `json:"output,omitzero"`
	// Image is the digest (sha256:…) of the container image the job
	// runs, its terms' reference resolved by the server; the exchange
	// records it on the contract. Empty for a job that names no image.
	Image string `json:"image,omitempty"`
	// Model is the model of the GPUs the job got (as its hello names
	// them): what was sold, whatever class the offer asked for; the
	// exchange records it on the contract. Models joined by + where the
	// GPUs differ.
	Model string `json:"model,omitempty"`
}

// Cancel releases an accept the exchange did not take.
type Cancel struct {
	Offer string `json:"offer"`
}

// Control asks a server to stop a contract's job
// (bourse.v1.deliver.<s>.control); the server then publishes the final
// reading with the reason.
type Control struct {
	Contract string          `json:"contract"`
	Action   contract.Reason `json:"action"` // ReasonSuspended or ReasonKilled
}

// MaxCounterID is the longest id a counter-offer may have.
const MaxCounterID = 64

// CounterID says whether id may name a counter-offer: 1 to MaxCounterID
// ASCII letters, digits, '.', '_' or '-', so that a client can show it
// and a person type it back to take it. The exchange relays no
// counter-offer of another id.
func CounterID(id string) bool {
	if id == "" || len(id) > MaxCounterID {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
		default:
			return false
		}
	}
	return true
}
