package sqltreasury_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
	"github.com/bourse/bourse/treasury/treasurytest"
)

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	treasurytest.Run(t, func(t testing.TB) treasury.Store {
		ctx := context.Background()
		l, err := sqlledger.Open(ctx, pgtest.FreshDB(t), sqlledger.Options{})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		s, err := sqltreasury.Open(ctx, l, nil)
		require.NoError(t, err)
		return s
	})
}
