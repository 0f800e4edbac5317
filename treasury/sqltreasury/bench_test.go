package sqltreasury_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// BenchmarkGrant is what the audit trail costs an administrative action:
// a grant through the treasury (the ledger's transfer, the balances
// before and after, the action's row, one transaction) beside the same
// transfer applied to the ledger alone, in one run.
func BenchmarkGrant(b *testing.B) {
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, pgtest.FreshDB(b), sqlledger.Options{GroupCommit: -1})
	require.NoError(b, err)
	b.Cleanup(l.Close)
	s, err := sqltreasury.Open(ctx, l, nil)
	require.NoError(b, err)
	tr := treasury.New(s, nil)
	require.NoError(b, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	_, err = tr.Open(ctx, "root", "CRED", "alice", "", "open")
	require.NoError(b, err)
	one := decimal.NewFromInt(1)
	b.Run("Ledger", func(b *testing.B) {
		for i := range b.N {
			_, err := currency.Do(ctx, l, currency.Grant("CRED", "alice", one, fmt.Sprintf("l/%d/%d", b.N, i), ""))
			require.NoError(b, err)
		}
	})
	b.Run("Treasury", func(b *testing.B) {
		for i := range b.N {
			_, err := tr.Grant(ctx, "ann", "CRED", "alice", one, fmt.Sprintf("t/%d/%d", b.N, i), "")
			require.NoError(b, err)
		}
	})
}
