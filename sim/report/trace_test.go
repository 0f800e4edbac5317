package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/sim/workload"
)

// TestTraceRows: runs of a trace say, in the table, the JSON and
// index.html, how many of its rows were dropped or skipped and why; runs
// of a generator say nothing of rows.
func TestTraceRows(t *testing.T) {
	rs := fixture()
	var plain bytes.Buffer
	require.NoError(t, Table(&plain, rs))
	assert.NotContains(t, plain.String(), "trace rows")

	rows := workload.Rows{Read: 8152, Jobs: 6203,
		Dropped: []workload.RowCount{{Reason: workload.DropNoGPUs, Rows: 1088}, {Reason: workload.DropNeverScheduled, Rows: 861}},
		Skipped: []workload.RowCount{}}
	for i := range rs {
		rs[i].Trace = &rows
	}
	var table bytes.Buffer
	require.NoError(t, Table(&table, rs))
	out := table.String()
	t.Log("\n" + out)
	assert.Regexp(t, `(?m)^trace rows read +8,152 +8,152 +8,152$`, out)
	assert.Regexp(t, `(?m)^trace rows dropped +1,949 +1,949 +1,949$`, out)
	assert.Regexp(t, `(?m)^trace rows skipped +0 +0 +0$`, out)
	assert.Contains(t, out, "Trace: 8,152 rows read, 6,203 jobs; 1,949 dropped (1,088 no GPUs, 861 never scheduled); none skipped.")

	var page bytes.Buffer
	require.NoError(t, html(&page, rs))
	assert.Contains(t, page.String(), "<td>trace rows dropped</td>")
	assert.Contains(t, page.String(), "1,088 no GPUs, 861 never scheduled")

	var js bytes.Buffer
	require.NoError(t, JSON(&js, rs))
	var back []struct{ Trace workload.Rows }
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, rows, back[0].Trace)

	// Runs that read different rows each get a note of their own.
	other := rows
	other.Skipped = []workload.RowCount{{Reason: workload.SkipOutOfOrder, Rows: 3}}
	rs[0].Trace = &other // posted, seed 3
	table.Reset()
	require.NoError(t, Table(&table, rs))
	assert.Contains(t, table.String(), "Trace, posted seed 3: 8,152 rows read, 6,203 jobs; 1,949 dropped (1,088 no GPUs, 861 never scheduled); 3 skipped (3 out of order).")
	assert.Contains(t, table.String(), "Trace, reserve seed 7:")
}
