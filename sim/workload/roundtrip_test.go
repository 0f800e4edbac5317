package workload

import (
	"bytes"
	"io"
	"testing"
	"testing/quick"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jobList is a Source of jobs in memory.
type jobList struct{ jobs []Job }

func (l *jobList) Next() (Job, error) {
	if len(l.jobs) == 0 {
		return Job{}, io.EOF
	}
	j := l.jobs[0]
	l.jobs = l.jobs[1:]
	return j, nil
}

// throughCSV is what a format keeps of jobs: their times to the second,
// from the first job's, and the fields it has columns for.
func throughCSV(f Format, jobs []Job) []Job {
	var out []Job
	first := wholeSeconds(jobs[0].Arrival)
	for _, j := range jobs {
		k := Job{
			ID:          j.ID,
			Arrival:     time.Duration(wholeSeconds(j.Arrival)-first) * time.Second,
			GPUs:        j.GPUs,
			Duration:    time.Duration(max(wholeSeconds(j.Duration), 1)) * time.Second,
			Utilization: 1,
		}
		k.Reference = k.Duration
		switch f {
		case Alibaba:
			k.Model, k.Preemptible, k.Client = j.Model, j.Preemptible, "LS"
			if j.Preemptible {
				k.Client = "BE"
			}
			if j.GPUs == 1 {
				k.Utilization = j.Utilization // in thousandths already
			}
		case Helios:
			k.Client = j.Client
		}
		out = append(out, k)
	}
	return out
}

func roundTrip(tb testing.TB, f Format, jobs []Job) []Job {
	tb.Helper()
	var buf bytes.Buffer
	n, err := Write(&buf, f, &jobList{jobs: jobs})
	require.NoError(tb, err)
	require.Equal(tb, len(jobs), n)
	back, r, err := readAll(tb, f, buf.String(), ReadOptions{})
	require.NoError(tb, err)
	require.Zero(tb, r.Dropped()+r.Skipped())
	return back
}

// TestRoundTrip: a written workload read back is the same jobs, within
// what each format keeps.
func TestRoundTrip(t *testing.T) {
	check := func(seed uint64, bursty, pareto bool) bool {
		spec := testSpec()
		if bursty {
			spec.Arrivals = ArrivalSpec{Process: "bursty", RateOn: 5, RateOff: 0.1, MeanOn: time.Minute, MeanOff: time.Hour}
		}
		if pareto {
			spec.Durations = DurationSpec{Dist: "pareto", Min: 100 * time.Millisecond, Alpha: 0.9}
		}
		spec.Utilization = Range{0.001, 1}
		spec.GPUs = map[int]float64{1: 3, 2: 1, 64: 1}
		jobs := generate(t, spec, seed, 300)
		ok := assert.Equal(t, jobs, roundTrip(t, JSONL, jobs), "jsonl keeps every field")
		for _, f := range []Format{Alibaba, Helios} {
			ok = assert.Equal(t, throughCSV(f, jobs), roundTrip(t, f, jobs), f) && ok
		}
		return ok
	}
	require.NoError(t, quick.Check(check, &quick.Config{MaxCount: 30}))
}

func TestRoundTripExact(t *testing.T) {
	// Times JSONL's seconds keep to the nanosecond, as long as a Duration
	// goes to the microsecond.
	jobs := []Job{
		{ID: "a", Client: "c", Arrival: 1, GPUs: 1, Duration: 1, Utilization: 0.123456789, Reference: 1},
		{ID: "b", Client: "c,\"d\"", Arrival: 100*24*time.Hour + 123456789, GPUs: 3, Model: "A100|x", Duration: 999999999, Utilization: 1, Deadline: 1999999999, Reference: 7},
		{ID: "c", Client: "c", Arrival: 100 * 365 * 24 * time.Hour, GPUs: 1, Duration: time.Hour, Utilization: 1, Reference: time.Hour},
	}
	assert.Equal(t, jobs, roundTrip(t, JSONL, jobs))
}

// TestCSVInjection: ids, clients and models that would start a formula
// are written as text in the CSV traces, and read back as they were.
func TestCSVInjection(t *testing.T) {
	jobs := []Job{
		{ID: "=1+1", Client: "@SUM(A1)", Arrival: 0, GPUs: 1, Model: "+H100", Duration: time.Second, Utilization: 1, Reference: time.Second},
		{ID: "'=x", Client: "-c", Arrival: time.Second, GPUs: 2, Model: "=H100", Duration: time.Second, Utilization: 1, Reference: time.Second},
	}
	for _, f := range []Format{Alibaba, Helios} {
		var buf bytes.Buffer
		_, err := Write(&buf, f, &jobList{jobs: append([]Job(nil), jobs...)})
		require.NoError(t, err)
		assert.Contains(t, buf.String(), "\n'=1+1,", f)
		assert.NotContains(t, buf.String(), ",=", f)
		assert.NotContains(t, buf.String(), ",+", f)
		assert.NotContains(t, buf.String(), ",@", f)
		assert.Equal(t, throughCSV(f, jobs), roundTrip(t, f, jobs), f)
	}
}
