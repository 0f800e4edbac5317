package exchange

import (
	"context"
	"errors"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Receipt takes a reading that server sends the exchange directly,
// asking what became of it (protocol.VerbReceipts): a reading it holds
// because no receipt for it came. The reading is counted as Reading
// counts one from the usage stream (signature, believability, idempotent
// by its sequence number); where that changes nothing, the store says
// whether it holds this reading or a later one (kept), or the contract
// ended before it (ended). What the store cannot tell now is to be asked
// again.
func (h *House) Receipt(ctx context.Context, server string, data []byte, sig string) protocol.Receipt {
	r, err := protocol.DecodeReading(data)
	if err != nil {
		h.metrics.readings.WithLabelValues("rejected").Inc()
		return protocol.Receipt{Status: protocol.ReceiptRefused, Error: protocol.WireError(err)}
	}
	rc := protocol.Receipt{Contract: r.Contract, Seq: r.Seq}
	c, err := h.reading(ctx, server, r.Contract, "", data, sig, r, nil)
	switch {
	case err == nil:
		rc.Status, rc.Stored = protocol.ReceiptKept, r.Seq
		return rc
	case errors.Is(err, ErrNoChange):
	case Transient(err):
		rc.Status, rc.Error = protocol.ReceiptAgain, protocol.WireError(err)
		return rc
	default:
		rc.Status, rc.Error = protocol.ReceiptRefused, protocol.WireError(err)
		return rc
	}
	if c.ID != r.Contract {
		// The store's Update gives the contract as stored with its
		// change's ErrNoChange, which count returned: read it again
		// only where a store did not.
		if c, err = h.store.Contract(ctx, r.Contract); err != nil {
			// It was there a moment ago (count read it): this is the
			// store's trouble, not the reading's.
			rc.Status, rc.Error = protocol.ReceiptAgain, protocol.WireError(err)
			return rc
		}
	}
	return receiptOf(c, r)
}

// receiptOf is the receipt of reading r that changed nothing on c, as
// stored: kept if c holds r or a later reading of its, else ended.
func receiptOf(c contract.Contract, r contract.Reading) protocol.Receipt {
	rc := protocol.Receipt{Contract: r.Contract, Seq: r.Seq, Status: protocol.ReceiptKept, State: c.State, Reason: c.Reason}
	if c.Reading != nil {
		rc.Stored = c.Reading.Seq
	}
	if rc.Stored < r.Seq {
		rc.Status = protocol.ReceiptEnded
	}
	return rc
}
