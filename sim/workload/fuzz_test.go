package workload

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// fuzzTrace reads arbitrary input as format f, both failing on and
// skipping bad rows: it must never panic, every error must be a
// *LineError, and every job it yields must be one the market can run.
// What it yields, written and read again, must be the same jobs (the
// netip round trip: parse, format, parse).
func fuzzTrace(t *testing.T, f Format, data string) {
	for _, skip := range []bool{false, true} {
		r, err := NewReader(strings.NewReader(data), f, ReadOptions{SkipBadRows: skip})
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("header error %v is no *LineError", err)
			}
			return
		}
		var jobs []Job
		for {
			j, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) || le.Line < 1 {
					t.Fatalf("error %v is no *LineError with a line", err)
				}
				if skip {
					t.Fatalf("skipping bad rows, yet %v", err)
				}
				break
			}
			if j.GPUs < 1 || j.Duration <= 0 || !(j.Utilization > 0 && j.Utilization <= 1) || j.Arrival < 0 || j.Reference != j.Duration || j.ID == "" {
				t.Fatalf("a job the market cannot run: %+v", j)
			}
			if len(jobs) > 0 && j.Arrival < jobs[len(jobs)-1].Arrival {
				t.Fatalf("job %s arrives before the one above", j.ID)
			}
			jobs = append(jobs, j)
		}
		if len(jobs) == 0 {
			continue
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, f, &jobList{jobs: jobs}); err != nil {
			t.Fatal(err)
		}
		back, _, err := readAll(t, f, buf.String(), ReadOptions{})
		if err != nil {
			t.Fatalf("reading back %q: %v", buf.String(), err)
		}
		want := throughCSV(f, jobs)
		for i := range want {
			if f == Helios {
				want[i].Utilization = 1 // the trace gave none: the default
			}
		}
		if len(back) != len(want) {
			t.Fatalf("%d jobs read back, %d written", len(back), len(want))
		}
		for i := range want {
			w, b := want[i], back[i]
			if f == Alibaba {
				w.Client, b.Client = "", "" // a QoS class, which LS stands for
				w.Utilization = jobs[i].Utilization
				if jobs[i].GPUs != 1 {
					w.Utilization = 1
				}
			}
			if w != b {
				t.Fatalf("job %d read back as\n%+v, not\n%+v", i, b, w)
			}
		}
	}
}

func addSamples(f *testing.F, file string, seeds ...string) {
	if b, err := os.ReadFile(sampleDir + "/" + file); err == nil {
		lines := strings.SplitAfter(string(b), "\n")
		f.Add(strings.Join(lines[:min(len(lines), 20)], ""))
	}
	for _, s := range seeds {
		f.Add(s)
	}
}

func FuzzAlibaba(f *testing.F) {
	addSamples(f, "alibaba-sample.csv", alibabaRowsOK, alibabaHead+"a,1,1,1,1000,,LS,Running,10,20,10\nb,1,1,1,,\"x\",BE,,5,6,5\n",
		"qos,num_gpu,creation_time,deletion_time,scheduled_time\nBE,1,1.5,2.5,1.5\n", "")
	f.Fuzz(func(t *testing.T, data string) { fuzzTrace(t, Alibaba, data) })
}

func FuzzHelios(f *testing.F) {
	addSamples(f, "helios-sample.csv", heliosRowsOK, "user,gpu_num,submit_time,start_time,end_time\nu,1,2020-01-01 00:00:00.5,1,3\n", "")
	f.Fuzz(func(t *testing.T, data string) { fuzzTrace(t, Helios, data) })
}

func FuzzJSONL(f *testing.F) {
	f.Add(`{"id":"a","client":"ada","arrival_s":1.5,"gpus":2,"model":"H100","duration_s":60,"utilization":0.5,"deadline_s":120,"preemptible":true,"reference_s":50}`)
	f.Fuzz(func(t *testing.T, data string) {
		r, err := NewReader(strings.NewReader(data), JSONL, ReadOptions{SkipBadRows: true})
		if err != nil {
			t.Fatal(err)
		}
		var jobs []Job
		for {
			j, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return // a line too long: the only error past skipping
			}
			jobs = append(jobs, j)
		}
		var buf bytes.Buffer
		if _, err := Write(&buf, JSONL, &jobList{jobs: append([]Job(nil), jobs...)}); err != nil {
			t.Fatal(err)
		}
		back, _, err := readAll(t, JSONL, buf.String(), ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range jobs {
			a, b := jobs[i], back[i]
			// Seconds as float64 keep a Duration to the microsecond.
			if a.ID != b.ID || a.Client != b.Client || a.Model != b.Model || a.GPUs != b.GPUs || a.Utilization != b.Utilization || a.Preemptible != b.Preemptible ||
				(a.Arrival-b.Arrival).Abs() > time.Microsecond || (a.Duration-b.Duration).Abs() > time.Microsecond {
				t.Fatalf("job %d read back as\n%+v, not\n%+v", i, b, a)
			}
		}
	})
}
