package workload

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// Format is a trace file's layout.
type Format string

// The formats a Reader reads and Write writes.
const (
	// Alibaba is cluster-trace-gpu-v2023's pod list (openb_pod_list_*.csv).
	Alibaba Format = "alibaba"
	// Helios is the Helios cluster_log.csv, and Philly converted to it.
	Helios Format = "helios"
	// JSONL is one JSON object a job, every field of it: this package's
	// own, for workloads made elsewhere.
	JSONL Format = "jsonl"
)

// ReadOptions tune how a trace is read. The zero value fails on the
// first bad row and makes jobs fully busy.
type ReadOptions struct {
	// SkipBadRows skips rows that cannot be read, or that go back in
	// time, and counts them (Skipped) instead of failing.
	SkipBadRows bool
	// Utilization is the busy fraction of a job whose trace gives none
	// (every Helios job, Alibaba jobs of whole GPUs); 1 if zero.
	Utilization float64
	// Clients, for Alibaba, which has no users, spreads pods over this
	// many clients "u0".."u<n-1>" by a hash of the pod's name; if zero, a
	// pod's client is its QoS class (LS, BE, Burstable, Guaranteed).
	Clients int
}

// row is one row of a trace: its time on the trace's own clock, and the
// job it is unless it is dropped.
type row struct {
	line int
	at   time.Duration
	raw  string // the time as written, for messages; "" to print at
	job  Job
	drop string // why the row is no job, if it is not: one of the Drop reasons
}

// Why rows are dropped: they are no GPU job the market could run.
const (
	DropNoGPUs         = "no GPUs"         // CPU-only
	DropNeverScheduled = "never scheduled" // never ran
	DropNoTime         = "ran for no time"
)

// Why rows are skipped, with ReadOptions.SkipBadRows: SkipOutOfOrder,
// or "bad " and the column that could not be read ("bad row" for a row
// whose columns do not fit the header).
const SkipOutOfOrder = "out of order"

// rows is a format's way through a file.
type rows interface {
	// next reads a row; a *LineError is a bad row, past which reading
	// may go on; any other error ends the file.
	next() (row, error)
	// order names the column rows are ordered by and says how to sort a
	// file by it.
	order() (column, how string)
}

// Reader is a Source of a trace's jobs, read a line at a time.
type Reader struct {
	rows    rows
	opt     ReadOptions
	rebase  bool // arrivals from the first row's time, not the clock's zero
	started bool
	origin  time.Duration
	last    row
	read    int
	jobs    int
	skipped map[string]int // by reason
	dropped map[string]int // by reason
}

// NewReader reads the trace r holds in format f; CSV formats read their
// header now, and a *LineError says what is wrong with it.
func NewReader(r io.Reader, f Format, opt ReadOptions) (*Reader, error) {
	if opt.Utilization < 0 || opt.Utilization > 1 {
		return nil, fmt.Errorf("workload: utilization %v is not in (0, 1]", opt.Utilization)
	}
	if opt.Utilization == 0 {
		opt.Utilization = 1
	}
	var (
		rs  rows
		err error
	)
	rd := &Reader{opt: opt, rebase: true, skipped: map[string]int{}, dropped: map[string]int{}}
	switch f {
	case Alibaba:
		rs, err = newAlibabaRows(r, opt.Clients)
	case Helios:
		rs, err = newHeliosRows(r)
	case JSONL:
		rs, rd.rebase = newJSONLRows(r), false
	default:
		return nil, fmt.Errorf("workload: format %q is none of alibaba, helios, jsonl", f)
	}
	if err != nil {
		return nil, err // a LineError, which Open puts after the file's name
	}
	rd.rows = rs
	return rd, nil
}

// Next is the next job of the trace, io.EOF after the last. An error about
// a row is a *LineError; with SkipBadRows such rows are counted instead.
func (r *Reader) Next() (Job, error) {
	for {
		rw, err := r.rows.next()
		if err != nil {
			var le *LineError
			if errors.As(err, &le) {
				r.read++
				if r.opt.SkipBadRows {
					r.skipped[badReason(le)]++
					continue
				}
			}
			return Job{}, err
		}
		r.read++
		if !r.started {
			r.started, r.last = true, rw
			if r.rebase {
				r.origin = rw.at
			}
		}
		if rw.at < r.last.at {
			if r.opt.SkipBadRows {
				r.skipped[SkipOutOfOrder]++
				continue
			}
			col, how := r.rows.order()
			return Job{}, &LineError{Line: rw.line, Column: col, Err: fmt.Errorf(
				"%w: %s %s is before the %s %s of line %d; a trace streams in order of arrival, sort it first: %s",
				ErrOutOfOrder, col, rw.written(), col, r.last.written(), r.last.line, how)}
		}
		r.last = rw
		r.last.job = Job{} // hold no more than the time
		if rw.drop != "" {
			r.dropped[rw.drop]++
			continue
		}
		r.jobs++
		j := rw.job
		j.Arrival = rw.at - r.origin
		if j.ID == "" {
			j.ID = "line" + strconv.Itoa(rw.line)
		}
		if j.Utilization == 0 {
			j.Utilization = r.opt.Utilization
		}
		if j.Reference == 0 {
			j.Reference = j.Duration
		}
		return j, nil
	}
}

// written is the row's time as the trace wrote it.
func (rw row) written() string {
	if rw.raw != "" {
		return rw.raw
	}
	return strconv.FormatFloat(rw.at.Seconds(), 'f', -1, 64)
}

// Skipped is how many bad rows were skipped so far (SkipBadRows).
func (r *Reader) Skipped() int { return sum(r.skipped) }

// Dropped is how many rows were read but were no GPU job to run: CPU-only
// pods and jobs, pods never scheduled, jobs that ran for no time.
func (r *Reader) Dropped() int { return sum(r.dropped) }

// Rows says what became of the rows read so far.
func (r *Reader) Rows() Rows {
	return Rows{Read: r.read, Jobs: r.jobs, Dropped: byReason(r.dropped), Skipped: byReason(r.skipped)}
}

// Rows is what became of a trace's rows: read, made into jobs, or
// dropped or skipped, and why. A run that stops early (the workload's
// jobs or horizon) reads only the rows up to where it stopped.
type Rows struct {
	Read int `json:"read"`
	// Jobs are the rows read as jobs; the run submits them all but one
	// past its horizon, if it has one.
	Jobs int `json:"jobs"`
	// Dropped are rows that are no GPU job the market could run (the
	// Drop reasons), Skipped rows that could not be read or came out of
	// order (ReadOptions.SkipBadRows): each by reason, most first.
	Dropped []RowCount `json:"dropped"`
	Skipped []RowCount `json:"skipped"`
}

// RowCount is how many rows went one way.
type RowCount struct {
	Reason string `json:"reason"`
	Rows   int    `json:"rows"`
}

// Total adds the counts up.
func Total(cs []RowCount) int {
	n := 0
	for _, c := range cs {
		n += c.Rows
	}
	return n
}

func byReason(m map[string]int) []RowCount {
	out := []RowCount{}
	for why, n := range m {
		out = append(out, RowCount{Reason: why, Rows: n})
	}
	slices.SortFunc(out, func(a, b RowCount) int {
		if a.Rows != b.Rows {
			return cmp.Compare(b.Rows, a.Rows)
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	return out
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// badReason names a bad row's reason by its column.
func badReason(le *LineError) string {
	if errors.Is(le, ErrOutOfOrder) {
		return SkipOutOfOrder
	}
	if le.Column == "" {
		return "bad row"
	}
	return "bad " + le.Column
}

var _ Source = (*Reader)(nil)

// sortCommand says how to sort a CSV trace by its column i (0-based),
// keeping the header first; numeric for numbers, as text for datetimes.
func sortCommand(i int, numeric bool) string {
	k := strconv.Itoa(i + 1)
	n := ""
	if numeric {
		n = "n"
	}
	return fmt.Sprintf("(head -n 1 FILE && tail -n +2 FILE | sort -s -t, -k%s,%s%s) > sorted.csv", k, k, n)
}
