package workload

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const heliosHead = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"

// Rows as HeliosData's README shows them, and a CPU-only job.
const heliosRowsOK = heliosHead +
	"1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-10 04:55:09,36848,0\n" +
	"1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,2020-06-09 18:45:36,249,0\n" +
	"1425513,uzqls,vcpDC,0,1,1,CANCELLED,2020-06-09 18:41:28,2020-06-09 18:41:28,2020-06-17 14:15:21,675233,0\n" +
	"1425514,uzqls,vcpDC,8,1,1,CANCELLED,2020-06-09 18:41:30,,,0,5\n" // cancelled while queued

func TestHelios(t *testing.T) {
	jobs, r, err := readAll(t, Helios, heliosRowsOK, ReadOptions{Utilization: 0.7})
	require.NoError(t, err)
	assert.Equal(t, []Job{
		{ID: "1425511", Client: "uXBbc", GPUs: 1, Duration: 36848 * time.Second, Utilization: 0.7, Reference: 36848 * time.Second},
		{ID: "1425512", Client: "uVMrF", Arrival: 26 * time.Second, GPUs: 4, Duration: 249 * time.Second, Utilization: 0.7, Reference: 249 * time.Second},
	}, jobs)
	assert.Equal(t, 2, r.Dropped())

	t.Run("Philly", func(t *testing.T) {
		// Philly as HeliosArtifact converts it: other columns, another
		// order, no duration column, a job that never started, a pandas
		// float for a count.
		data := "jobname,vc,job_id,user,state,gpu_num,submit_time,start_time,end_time\n" +
			"a,vc1,application_1,u1,Pass,2.0,2017-10-03 14:26:52,2017-10-03 14:27:00,2017-10-03 15:27:00\n" +
			"b,vc1,application_2,u2,Killed,1,2017-10-03 14:26:53,,\n" +
			"c,vc1,application_3,u1,Failed,8,2017-10-03T14:27:52.5,2017-10-03T14:28:00Z,2017-10-03T14:29:00Z\n"
		jobs, r, err := readAll(t, Helios, data, ReadOptions{})
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		assert.Equal(t, Job{ID: "application_1", Client: "u1", GPUs: 2, Duration: time.Hour, Utilization: 1, Reference: time.Hour}, jobs[0])
		assert.Equal(t, 60500*time.Millisecond, jobs[1].Arrival)
		assert.Equal(t, time.Minute, jobs[1].Duration)
		assert.Equal(t, 1, r.Dropped())
	})
}

func TestHeliosErrors(t *testing.T) {
	for _, tc := range []struct {
		name, row, column string
	}{
		{"Submit", "2,u,vc,1,1,1,COMPLETED,yesterday,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0", "submit_time"},
		{"Before1970", "2,u,vc,1,1,1,COMPLETED,1969-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0", "submit_time"},
		{"GPUs", "2,u,vc,1.5,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0", "gpu_num"},
		{"User", "2,,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0", "user"},
		{"Duration", "2,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:42:01,-60,0", "duration"},
		{"End", "2,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:40:01,,0", "end_time"},
		{"Start", "2,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,soon,2020-06-09 18:40:01,,0", "start_time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := heliosHead + "1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:00,2020-06-09 18:41:01,2020-06-09 18:42:01,60,0\n" + tc.row + "\n"
			jobs, _, err := readAll(t, Helios, data, ReadOptions{})
			assert.Len(t, jobs, 1)
			var le *LineError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, 3, le.Line)
			assert.Equal(t, tc.column, le.Column)
			t.Log(err)
			_, r, err := readAll(t, Helios, data, ReadOptions{SkipBadRows: true})
			require.NoError(t, err)
			assert.Equal(t, 1, r.Skipped())
		})
	}
	t.Run("Header", func(t *testing.T) {
		for _, h := range []string{"job_id,user,gpu_num,submit_time,start_time", "job_id,gpu_num,submit_time,duration"} {
			_, _, err := readAll(t, Helios, h+"\n", ReadOptions{})
			var le *LineError
			require.ErrorAs(t, err, &le, h)
			assert.Equal(t, 1, le.Line)
			t.Log(err)
		}
	})
	t.Run("OutOfOrder", func(t *testing.T) {
		data := heliosHead +
			"1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:00,,,60,0\n" +
			"2,u,vc,1,1,1,COMPLETED,2020-06-09 18:40:00,,,60,0\n"
		_, _, err := readAll(t, Helios, data, ReadOptions{})
		require.ErrorIs(t, err, ErrOutOfOrder)
		assert.Contains(t, err.Error(), "sort -s -t, -k8,8)")
		assert.Contains(t, err.Error(), "line 3, column submit_time")
	})
}
