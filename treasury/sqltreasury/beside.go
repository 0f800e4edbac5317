package sqltreasury

import (
	"context"
	"fmt"
	"time"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/treasury"
)

// Beside is the treasury beside ledger l: in l's database for the SQL
// ledger (applying this package's migrations), in memory beside an
// in-memory ledger. periods is the caps' clock of the process (the
// House's, where one runs beside), and the trail's clock with it; nil for
// the wall clock.
func Beside(ctx context.Context, l currency.Ledger, periods *caps.Periods) (*treasury.Treasury, error) {
	var now func() time.Time
	if periods != nil {
		now = periods.Now
	}
	switch l := l.(type) {
	case *sqlledger.Ledger:
		s, err := Open(ctx, l, now)
		if err != nil {
			return nil, fmt.Errorf("open the treasury's tables: %w", err)
		}
		return treasury.New(s, periods), nil
	case *mem.Ledger:
		return treasury.New(treasury.NewMem(l, now), periods), nil
	}
	return nil, fmt.Errorf("no treasury store beside a ledger of type %T", l)
}
