package exchange

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/trade"
)

// BookOrder orders waiting offers as the book offers them to servers: the
// highest price at full use first, then the earliest queued, then by id,
// so that every instance and store agrees on one order.
func BookOrder(a, b trade.Waiting) int {
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

// CheckBookLimits refuses one more waiting offer of a client who has mine
// in a book of all.
func CheckBookLimits(l BookLimits, mine, all int) error {
	switch {
	case l.PerClient > 0 && mine >= l.PerClient:
		return &bourse.Error{Code: bourse.EBookFull, Field: "wait",
			Message: fmt.Sprintf("you have %d waiting offers, the most one client may: cancel one, or offer without a wait", mine)}
	case l.Total > 0 && all >= l.Total:
		return &bourse.Error{Code: bourse.EBookFull, Field: "wait",
			Message: fmt.Sprintf("the book holds %d waiting offers, the most it may; offer without a wait, or later", all)}
	}
	return nil
}
