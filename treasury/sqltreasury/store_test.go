package sqltreasury_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
	"github.com/bourse/bourse/treasury/treasurytest"
)

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	treasurytest.Run(t, func(t testing.TB, now func() time.Time) treasury.Store {
		ctx := context.Background()
		l, err := sqlledger.Open(ctx, pgtest.FreshDB(t), sqlledger.Options{Now: now})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		s, err := sqltreasury.Open(ctx, l, now)
		require.NoError(t, err)
		return s
	})
}
