// Package safecsv writes CSV that spreadsheets open as data. A cell that
// starts with =, +, -, @, a tab or a carriage return is read by Excel,
// LibreOffice and Google Sheets as a formula (=HYPERLINK(…) that leaks
// the sheet, DDE that runs a program), and any cell can hold what a party
// chose: a GPU model a server announced, a client's id. Writer writes
// such a cell with a leading apostrophe (OWASP's advice for CSV
// injection), except a plain number (-1.5, +3e2), which is no formula.
// Every CSV the project writes goes through it; Restore gives readers of
// the project's own files the cell as it was.
package safecsv

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// Writer is a csv.Writer whose cells are neutralised.
type Writer struct {
	w   *csv.Writer
	rec []string
}

// NewWriter writes CSV to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: csv.NewWriter(w)} }

// Write writes one record, each cell through Cell; record is not changed.
func (w *Writer) Write(record []string) error {
	w.rec = w.rec[:0]
	for _, c := range record {
		w.rec = append(w.rec, Cell(c))
	}
	return w.w.Write(w.rec)
}

// Flush writes what is buffered; Error says whether it, or a Write, failed.
func (w *Writer) Flush()       { w.w.Flush() }
func (w *Writer) Error() error { return w.w.Error() }

// Cell is s as a spreadsheet reads it as text: with a leading apostrophe
// if it starts as a formula would and is not a plain number. So that
// Restore can tell, a cell of apostrophes before such a start gets one
// more too ("'=x" is written "”=x").
func Cell(s string) string {
	if formula(strings.TrimLeft(s, "'")) {
		return "'" + s
	}
	return s
}

// Restore is the cell Cell was given: without the apostrophe Cell added.
func Restore(s string) string {
	if strings.HasPrefix(s, "'") && formula(strings.TrimLeft(s, "'")) {
		return s[1:]
	}
	return s
}

// formula reports whether a spreadsheet would read s as a formula.
func formula(s string) bool {
	if s == "" || !formulaStart(s[0]) {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err != nil && !isRange(err)
}

func formulaStart(b byte) bool {
	switch b {
	case '=', '+', '-', '@', '\t', '\r':
		return true
	}
	return false
}

// isRange is a number too large for a float64: still a number.
func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
