package multirow_test

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/multirow"
)

func TestSQL(t *testing.T) {
	s := &multirow.Statement{Head: "UPDATE t SET a = v.a FROM (VALUES ", Tail: ") AS v(k, a) WHERE t.k = v.k",
		Casts: []string{"::UUID", ""}}
	require.Equal(t, "UPDATE t SET a = v.a FROM (VALUES ($1::UUID, $2)) AS v(k, a) WHERE t.k = v.k", s.SQL(1))
	require.Equal(t, "UPDATE t SET a = v.a FROM (VALUES ($1::UUID, $2), ($3::UUID, $4), ($5::UUID, $6)) AS v(k, a) WHERE t.k = v.k", s.SQL(3))
}

// Queue splits n rows into chunks of powers of two, at most MaxChunk,
// in order, each statement with its rows' arguments and a check of its
// row count.
func TestQueueChunks(t *testing.T) {
	s := &multirow.Statement{Head: "INSERT INTO t (k, a) VALUES ", Casts: multirow.Columns(2)}
	for _, c := range []struct {
		n      int
		chunks []int
	}{
		{0, nil},
		{1, []int{1}},
		{3, []int{2, 1}},
		{12, []int{8, 4}},
		{64, []int{64}},
		{100, []int{64, 32, 4}},
		{129, []int{64, 64, 1}},
	} {
		b := &pgx.Batch{}
		s.Queue(b.Queue, c.n, func(args []any, i int) []any { return append(args, i, -i) })
		var chunks []int
		next := 0
		for _, q := range b.QueuedQueries {
			rows := len(q.Arguments) / 2
			chunks = append(chunks, rows)
			require.Equal(t, s.SQL(rows), q.SQL)
			for r := range rows {
				require.Equal(t, []any{next, -next}, q.Arguments[2*r:2*r+2], "n=%d: rows in order", c.n)
				next++
			}
		}
		require.Equal(t, c.chunks, chunks, "n=%d", c.n)
		require.Equal(t, c.n, next)
	}
}

func TestRowsAffected(t *testing.T) {
	check := multirow.RowsAffected(3)
	require.NoError(t, check(pgconn.NewCommandTag("UPDATE 3")))
	require.ErrorContains(t, check(pgconn.NewCommandTag("UPDATE 2")), "wrote 2 rows, want 3")
	require.ErrorContains(t, multirow.RowsAffected(1)(pgconn.NewCommandTag("INSERT 0 0")), "wrote 0 rows, want 1")
}
