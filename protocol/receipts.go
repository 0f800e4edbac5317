package protocol

import (
	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// VerbReceipts is where a server asks the exchange what became of
// readings it holds (a request, bourse.v1.server.<s>.receipts, whose
// body is a Readings message), and where the exchange tells a server of
// the final readings it stored (a publish, bourse.v1.deliver.<s>.receipts).
// Both carry Receipts.
//
// A broker's acknowledgement says only that a reading reached the usage
// stream: the stream may lose it (a power loss before it was on disk, a
// server that drops what it acknowledged as it shuts down), and the
// exchange may refuse it for the server's reading rate. A reading that
// carries money (a final one) is the server's to keep until a receipt
// says the exchange's store has it, or that it can no longer count.
const VerbReceipts = "receipts"

// DeliverReceipts is the exchange's word to a server that readings of
// its are stored (a publish; lost ones the server asks for again).
const DeliverReceipts = VerbReceipts

// MaxReceipts is the most readings one receipts request may carry.
const MaxReceipts = 256

// Receipts answers for readings of one server, one receipt each.
type Receipts struct {
	Receipts []Receipt `json:"receipts"`
}

// Receipt says what became of one reading.
type Receipt struct {
	Contract string        `json:"contract"`
	Seq      uint64        `json:"seq"`
	Status   ReceiptStatus `json:"status"`
	// Stored is the sequence number of the contract's reading the store
	// holds (0 for none), where the store was read.
	Stored uint64 `json:"stored,omitempty"`
	// State and Reason are the contract's, where the store was read.
	State  contract.State  `json:"state,omitempty"`
	Reason contract.Reason `json:"reason,omitempty"`
	// Error says why a reading was refused, or why it is to be sent
	// again (rate_limited carries retry_after_ms).
	Error *bourse.Error `json:"error,omitempty"`
}

// ReceiptStatus is what became of a reading.
type ReceiptStatus string

const (
	// ReceiptKept: the store holds this reading, or a later one of its
	// contract, committed. The server may forget it.
	ReceiptKept ReceiptStatus = "kept"
	// ReceiptEnded: the contract ended (settled or voided) on an earlier
	// reading, before this one could count; it never will. The server
	// may forget it (State and Reason say how the contract ended).
	ReceiptEnded ReceiptStatus = "ended"
	// ReceiptRefused: the reading is refused for good (Error says why:
	// not the server's contract, no signature, not believable). Sending
	// it again changes nothing.
	ReceiptRefused ReceiptStatus = "refused"
	// ReceiptAgain: the reading could not be stored now (the database is
	// away, the server is over its rate): keep it and ask again later.
	ReceiptAgain ReceiptStatus = "again"
)

// Done says whether the server may forget the reading: the exchange has
// it, or it can never count.
func (r Receipt) Done() bool { return r.Status != ReceiptAgain }
