package workload

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse/internal/safecsv"
)

// table reads a CSV trace one record at a time and finds its columns by
// header name, so that traces with extra or reordered columns read the
// same.
type table struct {
	r     *csv.Reader
	names []string // the header, trimmed and lower-cased
}

func newTable(r io.Reader) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked here, with a message that says which
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, &LineError{Line: 1, Err: errors.New("empty file: no header line")}
	}
	if err != nil {
		return nil, csvErr(err)
	}
	t := &table{r: cr, names: make([]string, len(header))}
	for i, h := range header {
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff") // a spreadsheet's byte-order mark
		}
		t.names[i] = strings.ToLower(strings.TrimSpace(h))
	}
	return t, nil
}

// column is the index of the first of names in the header, or -1.
func (t *table) column(names ...string) int {
	for _, n := range names {
		for i, h := range t.names {
			if h == n {
				return i
			}
		}
	}
	return -1
}

// need is the index of a column the format cannot do without.
func (t *table) need(name string) (int, error) {
	if i := t.column(name); i >= 0 {
		return i, nil
	}
	return -1, &LineError{Line: 1, Column: name, Err: fmt.Errorf("missing from the header: %s", strings.Join(t.names, ","))}
}

// next is the next record and its line; a *LineError for a record that
// cannot be read, after which reading may go on.
func (t *table) next() ([]string, int, error) {
	rec, err := t.r.Read()
	if err != nil {
		return nil, 0, csvErr(err)
	}
	line, _ := t.r.FieldPos(0)
	if len(rec) != len(t.names) {
		return nil, line, &LineError{Line: line, Err: fmt.Errorf("%d fields, the header has %d", len(rec), len(t.names))}
	}
	for i, c := range rec {
		rec[i] = safecsv.Restore(c) // a trace this package wrote: its cells as they were
	}
	return rec, line, nil
}

// csvErr makes a CSV syntax error a LineError; io.EOF and read errors
// pass as they are.
func csvErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		// A quote left open runs on to later lines: name the record's
		// first line, where the quote was opened.
		if pe.Line != pe.StartLine {
			return &LineError{Line: pe.StartLine, Err: fmt.Errorf("at byte %d of line %d: %w", pe.Column, pe.Line, pe.Err)}
		}
		return &LineError{Line: pe.StartLine, Err: fmt.Errorf("at byte %d: %w", pe.Column, pe.Err)}
	}
	return err
}

// bad is a LineError for the value in column i of rec.
func (t *table) bad(i int, format string, args ...any) error {
	line, _ := t.r.FieldPos(i)
	return &LineError{Line: line, Column: t.names[i], Err: fmt.Errorf(format, args...)}
}

// field is column i of rec, trimmed; "" for a column the header lacks.
func field(rec []string, i int) string {
	if i < 0 {
		return ""
	}
	return strings.TrimSpace(rec[i])
}

// missing is true of an empty value, or pandas' NaN for one.
func missing(s string) bool { return s == "" || strings.EqualFold(s, "nan") }

// maxSeconds bounds times and counts of seconds: what a Duration holds,
// less a margin for sums of two.
const maxSeconds = math.MaxInt64 / int64(time.Second) / 2

// count is a whole number in [0, limit] in column i; "4.0" is 4, as
// pandas writes integers of a column that has gaps.
func (t *table) count(rec []string, i int, limit int64) (int64, error) {
	s := field(rec, i)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > float64(limit) {
			return 0, t.bad(i, "%q is not a whole number", s)
		}
		n = int64(f)
	}
	if n < 0 || n > limit {
		return 0, t.bad(i, "%d is not in [0, %d]", n, limit)
	}
	return n, nil
}

// seconds is a count of seconds, whole or not, in column i, as a
// Duration.
func (t *table) seconds(rec []string, i int) (time.Duration, error) {
	s := field(rec, i)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 || n > maxSeconds {
			return 0, t.bad(i, "%d seconds is not in [0, %d]", n, maxSeconds)
		}
		return time.Duration(n) * time.Second, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f <= float64(maxSeconds)) { // false for NaN too
		return 0, t.bad(i, "%q is not a number of seconds in [0, %d]", s, maxSeconds)
	}
	return time.Duration(math.Round(f * float64(time.Second))), nil
}
