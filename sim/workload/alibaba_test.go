package workload

import (
	"cmp"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const alibabaHead = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

// Rows as the published openb_pod_list files have them.
const alibabaRowsOK = alibabaHead +
	"openb-pod-0000,12000,16384,1,1000,,LS,Running,100,12537496,100\n" +
	"openb-pod-0001,6000,12288,1,460,,BE,Running,427061,12902960,427061\n" +
	"openb-pod-0005,20000,65536,0,0,,LS,Running,2759674,12902960,2759676\n" + // CPU-only
	"openb-pod-0017,88000,327680,8,1000,,Burstable,Succeeded,9437497,10769854,9437497\n" +
	"openb-pod-0061,11908,47104,1,1000,,BE,Pending,10001278,10001403,\n" + // never scheduled
	"openb-pod-4183,11400,48128,1,1000,V100M16|V100M32,Guaranteed,Running,11569390,11570909,11569426\n" +
	"openb-pod-4184,11400,48128,2,1000,nan,LS,Failed,11569390,11569390,11569390\n" // ran for no time

func readAll(tb testing.TB, f Format, data string, opt ReadOptions) ([]Job, *Reader, error) {
	tb.Helper()
	r, err := NewReader(strings.NewReader(data), f, opt)
	if err != nil {
		return nil, nil, err
	}
	var jobs []Job
	for {
		j, err := r.Next()
		if err == io.EOF {
			return jobs, r, nil
		}
		if err != nil {
			return jobs, r, err
		}
		jobs = append(jobs, j)
	}
}

func TestAlibaba(t *testing.T) {
	jobs, r, err := readAll(t, Alibaba, alibabaRowsOK, ReadOptions{})
	require.NoError(t, err)
	s := time.Second
	assert.Equal(t, []Job{
		{ID: "openb-pod-0000", Client: "LS", Arrival: 0, GPUs: 1, Duration: (12537496 - 100) * s, Utilization: 1, Reference: (12537496 - 100) * s},
		{ID: "openb-pod-0001", Client: "BE", Arrival: (427061 - 100) * s, GPUs: 1, Duration: (12902960 - 427061) * s, Utilization: 0.46, Preemptible: true, Reference: (12902960 - 427061) * s},
		{ID: "openb-pod-0017", Client: "Burstable", Arrival: (9437497 - 100) * s, GPUs: 8, Duration: (10769854 - 9437497) * s, Utilization: 1, Reference: (10769854 - 9437497) * s},
		{ID: "openb-pod-4183", Client: "Guaranteed", Arrival: (11569390 - 100) * s, GPUs: 1, Model: "V100M16", Duration: (11570909 - 11569426) * s, Utilization: 1, Reference: (11570909 - 11569426) * s},
	}, jobs)
	assert.Equal(t, 3, r.Dropped(), "CPU-only, never scheduled, no time")
	assert.Zero(t, r.Skipped())
	assert.Equal(t, Rows{Read: 7, Jobs: 4, Skipped: []RowCount{},
		Dropped: []RowCount{{DropNeverScheduled, 1}, {DropNoGPUs, 1}, {DropNoTime, 1}}}, r.Rows(), "each drop by its reason")

	t.Run("Clients", func(t *testing.T) {
		jobs, _, err := readAll(t, Alibaba, alibabaRowsOK, ReadOptions{Clients: 3, Utilization: 0.8})
		require.NoError(t, err)
		for _, j := range jobs {
			assert.Contains(t, []string{"u0", "u1", "u2"}, j.Client)
			assert.Equal(t, "u"+string(rune('0'+fnv32a(j.ID)%3)), j.Client, "by the name's hash")
		}
		assert.Equal(t, 0.8, jobs[0].Utilization, "whole GPU: the default")
		assert.Equal(t, 0.46, jobs[1].Utilization, "a share: the trace's")
	})
	t.Run("ColumnsByName", func(t *testing.T) {
		data := "\ufeffqos , creation_time,scheduled_time,deletion_time,num_gpu,extra\r\n" +
			"BE,5,6,16,2,x\r\n" + "LS,7,7,8,1,y\r\n"
		jobs, _, err := readAll(t, Alibaba, data, ReadOptions{})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		assert.Equal(t, Job{ID: "line2", Client: "BE", GPUs: 2, Duration: 10 * s, Utilization: 1, Preemptible: true, Reference: 10 * s}, jobs[0])
		assert.Equal(t, 2*s, jobs[1].Arrival)
	})
}

func TestAlibabaErrors(t *testing.T) {
	for _, tc := range []struct {
		name, row, column string
	}{
		{"NumGPU", "p,1,1,x,1000,,LS,Running,10,20,10", "num_gpu"},
		{"NegativeGPUs", "p,1,1,-1,1000,,LS,Running,10,20,10", "num_gpu"},
		{"GPUMilli", "p,1,1,1,1500,,LS,Running,10,20,10", "gpu_milli"},
		{"QoS", "p,1,1,1,1000,,Gold,Running,10,20,10", "qos"},
		{"Creation", "p,1,1,1,1000,,LS,Running,ten,20,10", "creation_time"},
		{"NegativeCreation", "p,1,1,1,1000,,LS,Running,-10,20,10", "creation_time"},
		{"HugeCreation", "p,1,1,1,1000,,LS,Running,99999999999999999999,20,10", "creation_time"},
		{"Deletion", "p,1,1,1,1000,,LS,Running,10,,10", "deletion_time"},
		{"DeletedBeforeScheduled", "p,1,1,1,1000,,LS,Running,10,9,10", "deletion_time"},
		{"Scheduled", "p,1,1,1,1000,,LS,Running,10,20,1e", "scheduled_time"},
		{"Fields", "p,1,1,1,1000,,LS,Running,10,20", ""},
		{"Quote", `p,1,1,1,1000,"V100,LS,Running,10,20,10` + "\n", ""},
		{"BareQuote", `p,1,1,1,1000,V"100,LS,Running,10,20,10`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := alibabaHead + "ok,1,1,1,1000,,LS,Running,1,20,1\n" + tc.row + "\n"
			jobs, _, err := readAll(t, Alibaba, data, ReadOptions{})
			assert.Len(t, jobs, 1, "the good row before")
			var le *LineError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, 3, le.Line)
			assert.Equal(t, tc.column, le.Column)
			assert.Contains(t, err.Error(), "line 3")
			t.Log(err)

			data += "ok2,1,1,1,1000,,LS,Running,30,40,30\n"
			jobs, r, err := readAll(t, Alibaba, data, ReadOptions{SkipBadRows: true})
			require.NoError(t, err)
			if tc.name == "Quote" {
				assert.Len(t, jobs, 1, "the open quote swallowed the row after")
			} else {
				assert.Len(t, jobs, 2, "skipped past it")
			}
			assert.Equal(t, 1, r.Skipped())
			assert.Equal(t, "bad "+cmp.Or(tc.column, "row"), r.Rows().Skipped[0].Reason)
		})
	}
	t.Run("Header", func(t *testing.T) {
		_, err := NewReader(strings.NewReader("name,num_gpu,qos,deletion_time,scheduled_time\n"), Alibaba, ReadOptions{})
		var le *LineError
		require.ErrorAs(t, err, &le)
		assert.Equal(t, LineError{Line: 1, Column: "creation_time", Err: le.Err}, *le)
		_, err = NewReader(strings.NewReader(""), Alibaba, ReadOptions{})
		require.ErrorAs(t, err, &le)
		assert.Equal(t, 1, le.Line)
	})
}

func TestAlibabaOutOfOrder(t *testing.T) {
	data := alibabaHead +
		"a,1,1,1,1000,,LS,Running,10,20,10\n" +
		"b,1,1,0,0,,LS,Running,30,40,30\n" + // CPU-only: still on the clock
		"c,1,1,1,1000,,LS,Running,20,40,20\n" +
		"d,1,1,1,1000,,LS,Running,30,40,30\n"
	jobs, _, err := readAll(t, Alibaba, data, ReadOptions{})
	assert.Len(t, jobs, 1)
	require.ErrorIs(t, err, ErrOutOfOrder)
	var le *LineError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, 4, le.Line)
	assert.Equal(t, "creation_time", le.Column)
	assert.Contains(t, err.Error(), "creation_time 20 is before the creation_time 30 of line 3")
	assert.Contains(t, err.Error(), "sort -s -t, -k9,9n")
	t.Log(err)

	jobs, r, err := readAll(t, Alibaba, data, ReadOptions{SkipBadRows: true})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "d"}, []string{jobs[0].ID, jobs[1].ID})
	assert.Equal(t, 1, r.Skipped())
	assert.Equal(t, 1, r.Dropped())
	assert.Equal(t, Rows{Read: 4, Jobs: 2, Skipped: []RowCount{{SkipOutOfOrder, 1}}, Dropped: []RowCount{{DropNoGPUs, 1}}}, r.Rows())
}
