package workload

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONL(t *testing.T) {
	data := `{"id":"a","client":"ada","arrival_s":1.5,"gpus":2,"model":"H100","duration_s":60,"utilization":0.5,"deadline_s":120,"preemptible":true,"reference_s":50}

{"id":"b","client":"bea","arrival_s":1.5,"gpus":1,"duration_s":0.001,"extra":"ignored"}
`
	jobs, r, err := readAll(t, JSONL, data, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, []Job{
		{ID: "a", Client: "ada", Arrival: 1500 * time.Millisecond, GPUs: 2, Model: "H100", Duration: time.Minute, Utilization: 0.5, Deadline: 2 * time.Minute, Preemptible: true, Reference: 50 * time.Second},
		{ID: "b", Client: "bea", Arrival: 1500 * time.Millisecond, GPUs: 1, Duration: time.Millisecond, Utilization: 1, Reference: time.Millisecond},
	}, jobs, "arrivals as written, not from the first")
	assert.Zero(t, r.Dropped())
}

func TestJSONLErrors(t *testing.T) {
	for _, tc := range []struct {
		name, row, column string
	}{
		{"Syntax", `{"id":"b",`, ""},
		{"Type", `{"id":"b","client":"c","arrival_s":"soon","gpus":1,"duration_s":1}`, "arrival_s"},
		{"GPUs", `{"id":"b","client":"c","arrival_s":2,"gpus":0,"duration_s":1}`, "gpus"},
		{"Duration", `{"id":"b","client":"c","arrival_s":2,"gpus":1}`, "duration_s"},
		{"Negative", `{"id":"b","client":"c","arrival_s":2,"gpus":1,"duration_s":-1}`, "duration_s"},
		{"Huge", `{"id":"b","client":"c","arrival_s":1e300,"gpus":1,"duration_s":1}`, "arrival_s"},
		{"Utilization", `{"id":"b","client":"c","arrival_s":2,"gpus":1,"duration_s":1,"utilization":1.5}`, "utilization"},
		{"Deadline", `{"id":"b","client":"c","arrival_s":2,"gpus":1,"duration_s":10,"deadline_s":5}`, "deadline_s"},
		{"OutOfOrder", `{"id":"b","client":"c","arrival_s":0.5,"gpus":1,"duration_s":1}`, "arrival_s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := `{"id":"a","client":"c","arrival_s":1,"gpus":1,"duration_s":1}` + "\n" + tc.row + "\n"
			jobs, _, err := readAll(t, JSONL, data, ReadOptions{})
			assert.Len(t, jobs, 1)
			var le *LineError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, 2, le.Line)
			assert.Equal(t, tc.column, le.Column)
			t.Log(err)
			_, r, err := readAll(t, JSONL, data, ReadOptions{SkipBadRows: true})
			require.NoError(t, err)
			assert.Equal(t, 1, r.Skipped())
		})
	}
	t.Run("TooLong", func(t *testing.T) {
		_, _, err := readAll(t, JSONL, string(bytes.Repeat([]byte(" "), maxLine+1)), ReadOptions{SkipBadRows: true})
		assert.ErrorContains(t, err, "line 1: longer than")
	})
}
