package workload

import (
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse/internal/safecsv"
)

// alibabaHeader is cluster-trace-gpu-v2023's pod list header, which
// WriteAlibaba writes.
var alibabaHeader = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}

// alibabaRows reads an Alibaba pod list. A pod is a job of num_gpu GPUs
// that arrives at creation_time and runs from scheduled_time until
// deletion_time; see the package documentation for the whole mapping.
type alibabaRows struct {
	t                                    *table
	name, numGPU, gpuMilli, gpuSpec, qos int
	creation, deletion, scheduled        int
	clients                              []string // "u0".."u<n-1>", if pods are spread by name
}

func newAlibabaRows(r io.Reader, clients int) (*alibabaRows, error) {
	t, err := newTable(r)
	if err != nil {
		return nil, err
	}
	a := &alibabaRows{t: t, name: t.column("name"), gpuMilli: t.column("gpu_milli"), gpuSpec: t.column("gpu_spec")}
	for _, c := range []struct {
		i    *int
		name string
	}{{&a.numGPU, "num_gpu"}, {&a.qos, "qos"}, {&a.creation, "creation_time"}, {&a.deletion, "deletion_time"}, {&a.scheduled, "scheduled_time"}} {
		if *c.i, err = t.need(c.name); err != nil {
			return nil, err
		}
	}
	for i := range clients {
		a.clients = append(a.clients, "u"+strconv.Itoa(i))
	}
	return a, nil
}

func (a *alibabaRows) order() (string, string) {
	return "creation_time", sortCommand(a.creation, true)
}

func (a *alibabaRows) next() (row, error) {
	rec, line, err := a.t.next()
	if err != nil {
		return row{line: line}, err
	}
	rw := row{line: line, raw: field(rec, a.creation)}
	if rw.at, err = a.t.seconds(rec, a.creation); err != nil {
		return rw, err
	}
	gpus, err := a.t.count(rec, a.numGPU, 1<<16)
	if err != nil {
		return rw, err
	}
	var milli int64
	if a.gpuMilli >= 0 && !missing(field(rec, a.gpuMilli)) {
		if milli, err = a.t.count(rec, a.gpuMilli, 1000); err != nil {
			return rw, err
		}
	}
	client, preemptible, ok := qosClass(field(rec, a.qos))
	if !ok {
		return rw, a.t.bad(a.qos, "%q is none of LS, BE, Burstable, Guaranteed", field(rec, a.qos))
	}
	deleted, err := a.t.seconds(rec, a.deletion)
	if err != nil {
		return rw, err
	}
	// A CPU-only pod is no GPU job whether or not it was scheduled: it
	// is counted as that first.
	if gpus == 0 {
		rw.drop = DropNoGPUs
		return rw, nil
	}
	if missing(field(rec, a.scheduled)) {
		rw.drop = DropNeverScheduled
		return rw, nil
	}
	scheduled, err := a.t.seconds(rec, a.scheduled)
	if err != nil {
		return rw, err
	}
	if deleted < scheduled {
		return rw, a.t.bad(a.deletion, "%s is before scheduled_time %s", field(rec, a.deletion), field(rec, a.scheduled))
	}
	if deleted == scheduled {
		rw.drop = DropNoTime
		return rw, nil
	}
	name := field(rec, a.name)
	if len(a.clients) > 0 {
		client = a.clients[fnv32a(name)%uint32(len(a.clients))]
	}
	rw.job = Job{
		ID:          name,
		Client:      client,
		GPUs:        int(gpus),
		Model:       firstModel(field(rec, a.gpuSpec)),
		Duration:    deleted - scheduled,
		Preemptible: preemptible,
	}
	if gpus == 1 && milli > 0 && milli < 1000 {
		rw.job.Utilization = float64(milli) / 1000 // a share of one GPU
	}
	return rw, nil
}

// qosClass is a pod's QoS class, canonically spelt, and whether it is
// preemptible: only best-effort (BE) pods are. Burstable pods hold the
// requests they were scheduled with, and Kubernetes evicts best-effort
// pods before them, so they count as guaranteed.
func qosClass(s string) (class string, preemptible, ok bool) {
	for _, c := range qosClasses {
		if strings.EqualFold(s, c.name) {
			return c.class, c.preemptible, true
		}
	}
	return "", false, false
}

var qosClasses = []struct {
	name, class string
	preemptible bool
}{
	{"LS", "LS", false}, {"BE", "BE", true}, {"Burstable", "Burstable", false}, {"Guaranteed", "Guaranteed", false},
	{"BestEffort", "BE", true}, {"best-effort", "BE", true},
}

// firstModel is the first of gpu_spec's '|'-separated models, "" (any)
// if none is given.
func firstModel(spec string) string {
	if missing(spec) {
		return ""
	}
	m, _, _ := strings.Cut(spec, "|")
	return strings.TrimSpace(m)
}

// writeAlibaba writes jobs as an Alibaba pod list: creation and
// scheduling at the arrival, deletion when the job would end, times and
// run times rounded to the second (a run of at least one). Columns the
// simulator does not read (cpu_milli, memory_mib) are 0, and pod_phase
// Succeeded. gpu_milli is the utilisation of a one-GPU job in thousandths,
// 1000 otherwise; qos is BE for preemptible jobs and LS for the others.
// The client, deadline and reference have no column and are lost.
func writeAlibaba(w io.Writer, src Source) (int, error) {
	cw := safecsv.NewWriter(w)
	if err := cw.Write(alibabaHeader); err != nil {
		return 0, err
	}
	rec := make([]string, len(alibabaHeader))
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
		milli := int64(1000)
		if j.GPUs == 1 && j.Utilization > 0 && j.Utilization < 1 {
			milli = min(max(int64(math.Round(j.Utilization*1000)), 1), 1000)
		}
		qos := "LS"
		if j.Preemptible {
			qos = "BE"
		}
		rec[0], rec[1], rec[2] = j.ID, "0", "0"
		rec[3], rec[4], rec[5] = strconv.Itoa(j.GPUs), strconv.FormatInt(milli, 10), j.Model
		rec[6], rec[7] = qos, "Succeeded"
		rec[8], rec[9], rec[10] = strconv.FormatInt(at, 10), strconv.FormatInt(at+run, 10), strconv.FormatInt(at, 10)
		if err := cw.Write(rec); err != nil {
			return n, err
		}
		n++
	}
	cw.Flush()
	return n, cw.Error()
}

// wholeSeconds rounds to the nearest second.
func wholeSeconds(d time.Duration) int64 { return int64(d.Round(time.Second) / time.Second) }

// fnv32a is the 32-bit FNV-1a hash of s, the same on every machine.
func fnv32a(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}
