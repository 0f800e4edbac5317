package exchange

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// BookOrder orders waiting offers as the book offers them to servers: the
// highest sure price first (Waiting.Price, contract.Terms.SurePrice), then
// the earliest queued, then by id, so that every instance and store agrees
// on one order.
func BookOrder(a, b contract.Waiting) int {
	return cmp.Or(b.Price.Cmp(a.Price), a.QueuedAt.Compare(b.QueuedAt), strings.Compare(a.ID, b.ID))
}

// ContractExists is the refusal to queue an offer whose contract exists:
// its request made one already.
func ContractExists(id string) error {
	return &bourse.Error{Code: bourse.EConflict, Field: "request_id", Message: "contract " + id + " of this request exists: it was accepted"}
}

// LeftMeanwhile says that a waiting offer matched was cancelled or
// expired before its contract could be made.
func LeftMeanwhile(id string) string {
	return "waiting offer " + id + " left the book (cancelled or expired) before its contract was made"
}

// CheckBookLimits decides on one more waiting offer w of a client who has
// mine waiting, in a book of all: refused past the client's bound; past
// the book's total, let in only by outbidding last, the last waiting
// offer of its currency in book order (nil if it has none), which then
// leaves (outbid true).
func CheckBookLimits(l BookLimits, mine, all int, w contract.Waiting, last *contract.Waiting) (outbid bool, err error) {
	switch {
	case l.PerClient > 0 && mine >= l.PerClient:
		return false, &bourse.Error{Code: bourse.EBookFull, Field: "wait",
			Message: fmt.Sprintf("you have %d waiting offers, the most one client may: cancel one, or offer without a wait", mine)}
	case l.Total <= 0 || all < l.Total:
		return false, nil
	case last != nil && BookOrder(w, *last) < 0:
		return true, nil
	}
	return false, &bourse.Error{Code: bourse.EBookFull, Field: "wait",
		Message: fmt.Sprintf("the book holds %d waiting offers, the most it may, and none of %s that this one outbids (it must be sure to pay more per GPU-second than the last): offer more, without a wait, or later", all, w.Terms.Currency)}
}

// OutbidMessage tells the client of a waiting offer that left a full book
// for a better one.
func OutbidMessage(by contract.Waiting) string {
	return fmt.Sprintf("the book was full and an offer sure to pay %s per GPU-second took its place", by.Price)
}
