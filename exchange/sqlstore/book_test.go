package sqlstore_test

import (
	"testing"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/housetest"
)

// TestBookRace: the book's race of two instances, cancels and a restart
// (exchange/housetest.BookRace) on PostgreSQL, with the audit.
func TestBookRace(t *testing.T) {
	s, _, _ := openTest(t, sqlledger.Options{})
	housetest.BookRace(t, s)
}
