package workload

import (
	"errors"
	"fmt"
)

// ErrOutOfOrder is wrapped by the LineError of a trace row that arrives
// before the row above it: a Source streams in order of arrival and
// cannot sort what it has not read.
var ErrOutOfOrder = errors.New("row out of order")

// LineError is a trace row that could not be read: the file's line
// (1-based, counting the header), the column by its header name ("" for
// the whole row) and why.
type LineError struct {
	Line   int
	Column string
	Err    error
}

func (e *LineError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d, column %s: %v", e.Line, e.Column, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }

// FieldError is a Spec field that is not valid, by its dotted path from
// the workload (e.g. "generator.arrivals.rate"), so that a scenario
// loader can point at the YAML line it came from.
type FieldError struct {
	Path string
	Err  error
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// fieldErr makes a FieldError from a format.
func fieldErr(path, format string, args ...any) error {
	return &FieldError{Path: path, Err: fmt.Errorf(format, args...)}
}

// under puts an error from a part of the Spec at that part's path: a
// FieldError's path goes below it, any other error is the part's own.
func under(path string, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Path: path + "." + fe.Path, Err: fe.Err}
	}
	return &FieldError{Path: path, Err: err}
}
