package sqlsessions_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/console/sessiontest"
	"github.com/bourse/bourse/console/sqlsessions"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/internal/pgtest"
)

func TestConformance(t *testing.T) {
	pgtest.URL(t)
	sessiontest.Run(t, func(t testing.TB) console.Sessions {
		ctx := context.Background()
		l, err := sqlledger.Open(ctx, pgtest.FreshDB(t), sqlledger.Options{})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		s, err := sqlsessions.Open(ctx, l)
		require.NoError(t, err)
		return s
	})
}
