// Package multirow writes any number of rows in few SQL statements: an
// INSERT … VALUES or an UPDATE … FROM (VALUES …) of many rows instead of
// one statement a row. Each statement costs PostgreSQL a parse, a bind and
// an execution start whatever its size, and pgx its own messages, so a
// group commit of a dozen callers writes its rows in a handful of
// statements. Both PostgreSQL and CockroachDB accept these forms.
package multirow

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// MaxChunk is the most rows one statement writes.
const MaxChunk = 64

// Statement is a statement that writes rows given as a VALUES list: its
// text before the list, after it, and one cast for each column's
// parameter ("::UUID", or "" where the column's type is the parameter's).
// Writing n rows takes one statement per power of two in n, at most
// MaxChunk rows each: few statements, and few distinct texts for pgx and
// the server to prepare and plan once. (Arrays and unnest would make one
// statement of any n, but PostgreSQL executes them several times slower
// for the one or two rows of most transactions.) It is safe for
// concurrent use.
type Statement struct {
	Head, Tail string
	Casts      []string

	mu    sync.Mutex
	texts map[int]string
}

// Columns is n columns without casts.
func Columns(n int) []string { return make([]string, n) }

// SQL is the statement's text for n rows.
func (s *Statement) SQL(n int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.texts[n]; ok {
		return t
	}
	var b strings.Builder
	b.WriteString(s.Head)
	p := 1
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j, c := range s.Casts {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			b.WriteString(c)
			p++
		}
		b.WriteByte(')')
	}
	b.WriteString(s.Tail)
	if s.texts == nil {
		s.texts = map[int]string{}
	}
	s.texts[n] = b.String()
	return s.texts[n]
}

// Queue queues, with queue (a pgx.Batch's Queue, say), the statements
// that write n rows; row appends the parameters of row i to args. Each
// statement must write all its rows, or its batch fails.
func (s *Statement) Queue(queue func(sql string, args ...any) *pgx.QueuedQuery, n int, row func(args []any, i int) []any) {
	for i := 0; i < n; {
		chunk := MaxChunk
		for chunk > n-i {
			chunk /= 2
		}
		args := make([]any, 0, chunk*len(s.Casts))
		for j := range chunk {
			args = row(args, i+j)
		}
		queue(s.SQL(chunk), args...).Exec(RowsAffected(chunk))
		i += chunk
	}
}

// RowsAffected checks that a statement wrote the n rows it was given: an
// UPDATE finds the rows that its transaction has locked, an INSERT fails
// in the database on a row that exists.
func RowsAffected(n int) func(pgconn.CommandTag) error {
	return func(ct pgconn.CommandTag) error {
		if ct.RowsAffected() != int64(n) {
			return fmt.Errorf("%s wrote %d rows, want %d", ct, ct.RowsAffected(), n)
		}
		return nil
	}
}
