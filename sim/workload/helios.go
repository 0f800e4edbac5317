package workload

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse/internal/safecsv"
)

// heliosHeader is the Helios cluster_log.csv header, which WriteHelios
// writes.
var heliosHeader = []string{"job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time", "start_time", "end_time", "duration", "queue"}

// heliosEpoch is when a written Helios trace starts: the Helios traces'
// own first day.
var heliosEpoch = time.Date(2020, 4, 1, 0, 0, 0, 0, time.UTC)

// heliosRows reads a Helios (or converted Philly) job log: a job of
// gpu_num GPUs from user, submitted at submit_time, that runs for
// duration seconds (or end_time − start_time).
type heliosRows struct {
	t                      *table
	id, user, gpus, submit int
	start, end, duration   int
}

func newHeliosRows(r io.Reader) (*heliosRows, error) {
	t, err := newTable(r)
	if err != nil {
		return nil, err
	}
	h := &heliosRows{t: t, id: t.column("job_id", "jobid"), start: t.column("start_time"), end: t.column("end_time"), duration: t.column("duration")}
	if h.user, err = t.need("user"); err != nil {
		return nil, err
	}
	if h.gpus, err = t.need("gpu_num"); err != nil {
		return nil, err
	}
	if h.submit, err = t.need("submit_time"); err != nil {
		return nil, err
	}
	if h.duration < 0 && (h.start < 0 || h.end < 0) {
		return nil, &LineError{Line: 1, Column: "duration", Err: fmt.Errorf("missing, and start_time or end_time too: nothing says how long jobs ran (%s)", strings.Join(t.names, ","))}
	}
	return h, nil
}

func (h *heliosRows) order() (string, string) {
	return "submit_time", sortCommand(h.submit, false)
}

func (h *heliosRows) next() (row, error) {
	rec, line, err := h.t.next()
	if err != nil {
		return row{line: line}, err
	}
	rw := row{line: line, raw: field(rec, h.submit)}
	if rw.at, err = h.datetime(rec, h.submit); err != nil {
		return rw, err
	}
	gpus, err := h.t.count(rec, h.gpus, 1<<16)
	if err != nil {
		return rw, err
	}
	user := field(rec, h.user)
	if user == "" {
		return rw, h.t.bad(h.user, "empty: every job needs a user, its client")
	}
	run, ran, err := h.run(rec)
	if err != nil {
		return rw, err
	}
	switch {
	case gpus == 0:
		rw.drop = DropNoGPUs
		return rw, nil
	case !ran:
		rw.drop = DropNeverScheduled
		return rw, nil
	case run == 0:
		rw.drop = DropNoTime
		return rw, nil
	}
	rw.job = Job{ID: field(rec, h.id), Client: user, GPUs: int(gpus), Duration: run}
	return rw, nil
}

// run is how long a job ran: its duration, or end_time − start_time
// where that is missing; false if it has neither (it never started).
func (h *heliosRows) run(rec []string) (time.Duration, bool, error) {
	if h.duration >= 0 && !missing(field(rec, h.duration)) {
		d, err := h.t.seconds(rec, h.duration)
		return d, err == nil, err
	}
	if h.start < 0 || h.end < 0 || missing(field(rec, h.start)) || missing(field(rec, h.end)) {
		return 0, false, nil
	}
	start, err := h.datetime(rec, h.start)
	if err != nil {
		return 0, false, err
	}
	end, err := h.datetime(rec, h.end)
	if err != nil {
		return 0, false, err
	}
	if end < start {
		return 0, false, h.t.bad(h.end, "%s is before start_time %s", field(rec, h.end), field(rec, h.start))
	}
	return end - start, true, nil
}

// datetimeLayouts are the ways traces write a time: Helios's and
// pandas', ISO 8601's, with or without fractions of a second.
var datetimeLayouts = []string{time.DateTime, "2006-01-02T15:04:05", time.RFC3339Nano}

// datetime is the time in column i, from the Unix epoch: a datetime in
// UTC unless it says otherwise, or a count of seconds.
func (h *heliosRows) datetime(rec []string, i int) (time.Duration, error) {
	s := field(rec, i)
	if s != "" && strings.Trim(s, "0123456789.") == "" {
		return h.t.seconds(rec, i)
	}
	for _, layout := range datetimeLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		if sec := t.Unix(); sec < 0 || sec > maxSeconds {
			return 0, h.t.bad(i, "%s is not between 1970 and %d", s, 1970+maxSeconds/(365*24*3600))
		}
		return time.Duration(t.Unix())*time.Second + time.Duration(t.Nanosecond()), nil
	}
	return 0, h.t.bad(i, "%q is not a time like 2020-04-01 00:00:02", s)
}

// writeHelios writes jobs as a Helios cluster log: submitted from
// 2020-04-01 00:00:00 UTC on, started at once (queue 0) and COMPLETED,
// times and run times rounded to the second (a run of at least one).
// vc is vc0, cpu_num 0 and node_num the jobs' GPUs over eight, rounded
// up: the simulator reads none of them. The model, utilisation,
// preemptibility, deadline and reference have no column and are lost.
func writeHelios(w io.Writer, src Source) (int, error) {
	cw := safecsv.NewWriter(w)
	if err := cw.Write(heliosHeader); err != nil {
		return 0, err
	}
	rec := make([]string, len(heliosHeader))
	n := 0
	for {
		j, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
		at, run := wholeSeconds(j.Arrival), max(wholeSeconds(j.Duration), 1)
		submit := heliosEpoch.Add(time.Duration(at) * time.Second)
		end := submit.Add(time.Duration(run) * time.Second)
		rec[0], rec[1], rec[2] = j.ID, j.Client, "vc0"
		rec[3], rec[4], rec[5], rec[6] = strconv.Itoa(j.GPUs), "0", strconv.Itoa((j.GPUs+7)/8), "COMPLETED"
		rec[7], rec[8], rec[9] = submit.Format(time.DateTime), submit.Format(time.DateTime), end.Format(time.DateTime)
		rec[10], rec[11] = strconv.FormatInt(run, 10), "0"
		if err := cw.Write(rec); err != nil {
			return n, err
		}
		n++
	}
	cw.Flush()
	return n, cw.Error()
}
