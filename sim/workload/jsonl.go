package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
)

// jsonJob is a Job as a line of JSONL: times in seconds, as numbers that
// jq, pandas and spreadsheets read, exact to the nanosecond below some
// hundred days and to the microsecond well beyond.
type jsonJob struct {
	ID          string  `json:"id"`
	Client      string  `json:"client"`
	Arrival     float64 `json:"arrival_s"`
	GPUs        int     `json:"gpus"`
	Model       string  `json:"model,omitempty"`
	Duration    float64 `json:"duration_s"`
	Utilization float64 `json:"utilization"`
	Deadline    float64 `json:"deadline_s,omitempty"`
	Preemptible bool    `json:"preemptible,omitempty"`
	Reference   float64 `json:"reference_s,omitempty"`
}

// maxLine is the longest JSONL line read: a job is a few hundred bytes.
const maxLine = 1 << 20

// jsonlRows reads JSON lines; a job's arrival is as written, from the
// workload's start.
type jsonlRows struct {
	s    *bufio.Scanner
	line int
}

func newJSONLRows(r io.Reader) *jsonlRows {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 64<<10), maxLine)
	return &jsonlRows{s: s}
}

func (*jsonlRows) order() (string, string) {
	return "arrival_s", "jq -s -c 'sort_by(.arrival_s)[]' FILE > sorted.jsonl"
}

func (l *jsonlRows) next() (row, error) {
	var b []byte
	for {
		if !l.s.Scan() {
			if err := l.s.Err(); err != nil {
				if errors.Is(err, bufio.ErrTooLong) {
					return row{}, fmt.Errorf("line %d: longer than %d bytes", l.line+1, maxLine)
				}
				return row{}, err
			}
			return row{}, io.EOF
		}
		l.line++
		if b = bytes.TrimSpace(l.s.Bytes()); len(b) > 0 {
			break // blank lines are nothing
		}
	}
	rw := row{line: l.line}
	var jj jsonJob
	if err := json.Unmarshal(b, &jj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return rw, &LineError{Line: l.line, Column: te.Field, Err: fmt.Errorf("%s is not a %s", te.Value, te.Type)}
		}
		return rw, &LineError{Line: l.line, Err: err}
	}
	bad := func(col, format string, args ...any) error {
		return &LineError{Line: l.line, Column: col, Err: fmt.Errorf(format, args...)}
	}
	var err error
	j := Job{ID: jj.ID, Client: jj.Client, GPUs: jj.GPUs, Model: jj.Model, Utilization: jj.Utilization, Preemptible: jj.Preemptible}
	for _, t := range []struct {
		col string
		s   float64
		d   *time.Duration
	}{{"arrival_s", jj.Arrival, &rw.at}, {"duration_s", jj.Duration, &j.Duration}, {"deadline_s", jj.Deadline, &j.Deadline}, {"reference_s", jj.Reference, &j.Reference}} {
		if *t.d, err = fromSeconds(t.s); err != nil {
			return rw, bad(t.col, "%w", err)
		}
	}
	switch {
	case j.GPUs < 1:
		return rw, bad("gpus", "%d: a job needs at least one GPU", j.GPUs)
	case j.Duration <= 0:
		return rw, bad("duration_s", "must be more than 0")
	case !(j.Utilization >= 0 && j.Utilization <= 1):
		return rw, bad("utilization", "%v is not in (0, 1]", j.Utilization)
	case j.Deadline != 0 && j.Deadline < j.Duration:
		return rw, bad("deadline_s", "%v is shorter than the run, %v: no job could meet it", j.Deadline, j.Duration)
	}
	rw.job = j
	return rw, nil
}

// fromSeconds is a number of seconds, at least 0, as a Duration.
func fromSeconds(s float64) (time.Duration, error) {
	if !(s >= 0 && s <= float64(maxSeconds)) { // false for NaN too
		return 0, fmt.Errorf("%v is not a number of seconds in [0, %d]", s, maxSeconds)
	}
	return time.Duration(math.Round(s * float64(time.Second))), nil
}

// writeJSONL writes every field of each job, a line a job.
func writeJSONL(w io.Writer, src Source) (int, error) {
	enc := json.NewEncoder(w)
	n := 0
	for {
		j, err := src.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		err = enc.Encode(jsonJob{
			ID: j.ID, Client: j.Client, Arrival: j.Arrival.Seconds(), GPUs: j.GPUs, Model: j.Model,
			Duration: j.Duration.Seconds(), Utilization: j.Utilization, Deadline: j.Deadline.Seconds(),
			Preemptible: j.Preemptible, Reference: j.Reference.Seconds(),
		})
		if err != nil {
			return n, err
		}
		n++
	}
}
