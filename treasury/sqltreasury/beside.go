package sqltreasury

import (
	"context"
	"fmt"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/treasury"
)

// Beside is the treasury beside ledger l: in l's database for the SQL
// ledger (applying this package's migrations), in memory beside an
// in-memory ledger.
func Beside(ctx context.Context, l currency.Ledger) (*treasury.Treasury, error) {
	switch l := l.(type) {
	case *sqlledger.Ledger:
		s, err := Open(ctx, l, nil)
		if err != nil {
			return nil, fmt.Errorf("open the treasury's tables: %w", err)
		}
		return treasury.New(s), nil
	case *mem.Ledger:
		return treasury.New(treasury.NewMem(l, nil)), nil
	}
	return nil, fmt.Errorf("no treasury store beside a ledger of type %T", l)
}
