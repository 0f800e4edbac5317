//go:build ignore

// openb-scale.go writes a simulator scenario of Alibaba's GPU cluster
// (cluster-trace-gpu-v2023) scaled to N nodes, for make bench-scale:
// servers from the node list, jobs from the pod list, both scaled by the
// same factor, so that every size carries the same load per GPU.
//
//	go run scripts/openb-scale.go -n 1213 -o DIR [-nodes openb_node_list_gpu_node.csv -pods openb_pod_list_default.csv]
//
// writes DIR/scenario.yaml and DIR/pods.csv. With the trace's own files
// (github.com/alibaba/clusterdata, cluster-trace-gpu-v2023/csv) it uses
// them; without, it makes a node list and pod list of the trace's shape
// from a fixed seed: the node list's models and GPUs per node in the
// trace's counts, and 6,203 GPU pods with its mix of GPU counts, shared
// GPUs and QoS classes, lognormal run times of its median and 90th
// percentile, arriving over its 149 days.
//
// Scaling: below the trace's 1,213 nodes, N nodes are taken evenly from
// the node list (which is in model order, so the models keep their
// shares) and the pods likewise, and the scenario runs ⌈1213/N⌉ seeds,
// so that each size simulates about the trace's 6,203 jobs in all (seeds
// change the order servers are asked in, not the jobs). At a multiple of
// 1,213 the node list and the pod list are copied that many times (the
// copies' pods arrive with the originals).
package main

import (
	"cmp"
	"encoding/csv"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bourse/bourse/internal/safecsv"
)

type node struct {
	model string
	gpus  int
}

type pod struct {
	rec     []string
	created int64
}

// traceNodes are the node list's models and GPUs per node, in its order,
// with how many nodes of each (openb_node_list_gpu_node.csv).
var traceNodes = []struct {
	model     string
	gpus, num int
}{
	{"P100", 2, 131}, {"P100", 1, 3}, {"T4", 2, 387}, {"T4", 4, 17}, {"V100M16", 1, 19}, {"V100M16", 4, 28},
	{"V100M16", 8, 8}, {"V100M32", 4, 9}, {"V100M32", 8, 21}, {"A10", 1, 2}, {"G2", 8, 549}, {"G3", 8, 39},
}

const traceNodeCount = 1213

// memory is what the scenario says of a model's GPU memory; the pods ask
// for none, so it only labels the servers.
var memory = map[string]int{"P100": 16384, "T4": 16384, "V100M16": 16384, "V100M32": 32768, "A10": 24576, "G2": 32768, "G3": 32768}

var header = []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"}

func main() {
	n := flag.Int("n", traceNodeCount, "nodes")
	out := flag.String("o", "", "output folder")
	nodesFile := flag.String("nodes", "", "the trace's openb_node_list_gpu_node.csv (absent: made up in its shape)")
	podsFile := flag.String("pods", "", "the trace's openb_pod_list_default.csv (absent: made up in its shape)")
	strategy := flag.String("strategy", "adaptive", "the clients' strategy")
	jobs := flag.Int("jobs", 0, "at most this many jobs a run (0: all)")
	flag.Parse()
	if *out == "" || *n < 1 {
		log.Fatal("usage: openb-scale -n N -o DIR [-nodes FILE -pods FILE]")
	}
	nodes := readNodes(*nodesFile)
	pods := readPods(*podsFile)
	seeds := 1
	switch {
	case *n < len(nodes):
		pods = spread(pods, max(1, int(math.Round(float64(len(pods))*float64(*n)/float64(len(nodes))))))
		nodes = spread(nodes, *n)
		seeds = int(math.Ceil(float64(traceNodeCount) / float64(*n)))
	case *n > len(nodes):
		if *n%len(nodes) != 0 {
			log.Fatalf("-n %d: above %d nodes, a multiple of them", *n, len(nodes))
		}
		copies := *n / len(nodes)
		nodes = repeat(nodes, copies)
		pods = copyPods(pods, copies)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	writePods(filepath.Join(*out, "pods.csv"), pods)
	writeScenario(filepath.Join(*out, "scenario.yaml"), *n, nodes, seeds, *strategy, *jobs, *nodesFile != "")
}

func readNodes(file string) []node {
	if file == "" {
		var out []node
		for _, t := range traceNodes {
			for range t.num {
				out = append(out, node{t.model, t.gpus})
			}
		}
		return out
	}
	recs := readCSV(file)
	col := columns(recs[0])
	var out []node
	for _, r := range recs[1:] {
		g, err := strconv.Atoi(r[col["gpu"]])
		if err != nil || g < 1 {
			continue
		}
		out = append(out, node{r[col["model"]], g})
	}
	return out
}

func readPods(file string) []pod {
	var recs [][]string
	if file == "" {
		recs = makePods()
	} else {
		recs = readCSV(file)
	}
	col := columns(recs[0])
	var out []pod
	for _, r := range recs[1:] {
		c, err := strconv.ParseInt(r[col["creation_time"]], 10, 64)
		if err != nil {
			log.Fatalf("creation_time %q: %v", r[col["creation_time"]], err)
		}
		rec := make([]string, len(header))
		for i, h := range header {
			if j, ok := col[h]; ok {
				rec[i] = r[j]
			}
		}
		out = append(out, pod{rec, c})
	}
	slices.SortStableFunc(out, func(a, b pod) int { return cmp.Compare(a.created, b.created) })
	return out
}

// makePods makes a pod list of the trace's shape: 6,203 GPU pods (the
// trace's scheduled GPU pods; its CPU-only and unscheduled rows would be
// dropped by the reader anyway).
func makePods() [][]string {
	rng := rand.New(rand.NewPCG(2023, 6203))
	const span = 12_901_761 // the last creation_time of the trace
	const jobs = 6203
	recs := [][]string{header}
	times := make([]int64, jobs)
	for i := range times {
		times[i] = rng.Int64N(span)
	}
	slices.Sort(times)
	for i, at := range times {
		gpus, milli := 1, 1000
		switch x := rng.Float64(); {
		case x < 0.0071:
			gpus = 8
		case x < 0.0095:
			gpus = 4
		case x < 0.0119:
			gpus = 2
		default:
			if rng.Float64() < 0.42 {
				milli = 50 + 10*rng.IntN(90)
			}
		}
		qos := "LS"
		switch x := rng.Float64(); {
		case x < 0.405:
			qos = "BE"
		case x < 0.421:
			qos = "Burstable"
		case x < 0.422:
			qos = "Guaranteed"
		}
		// Run times: lognormal, median 653 s and 90th percentile 7,380 s as in
		// the trace, at most its longest.
		d := int64(math.Min(653*math.Exp(1.89*rng.NormFloat64()), 12_537_496))
		d = max(d, 1)
		recs = append(recs, []string{fmt.Sprintf("openb-pod-%04d", i), "8000", "16384", strconv.Itoa(gpus), strconv.Itoa(milli), "", qos, "Running",
			strconv.FormatInt(at, 10), strconv.FormatInt(at+d, 10), strconv.FormatInt(at, 10)})
	}
	return recs
}

// spread takes k of xs, evenly.
func spread[T any](xs []T, k int) []T {
	out := make([]T, 0, k)
	for i := range k {
		out = append(out, xs[(2*i+1)*len(xs)/(2*k)])
	}
	return out
}

func repeat[T any](xs []T, k int) []T {
	out := make([]T, 0, len(xs)*k)
	for range k {
		out = append(out, xs...)
	}
	return out
}

func copyPods(pods []pod, k int) []pod {
	out := make([]pod, 0, len(pods)*k)
	for _, p := range pods {
		for c := range k {
			rec := slices.Clone(p.rec)
			rec[0] = fmt.Sprintf("%s-c%d", rec[0], c)
			out = append(out, pod{rec, p.created})
		}
	}
	return out
}

func writePods(file string, pods []pod) {
	f, err := os.Create(file)
	if err != nil {
		log.Fatal(err)
	}
	w := safecsv.NewWriter(f) // every CSV the project writes goes through safecsv (its TestOnePlace)
	w.Write(header)
	for _, p := range pods {
		w.Write(p.rec)
	}
	w.Flush()
	if err := cmp.Or(w.Error(), f.Close()); err != nil {
		log.Fatal(err)
	}
}

func writeScenario(file string, n int, nodes []node, seeds int, strategy string, jobs int, real bool) {
	type group struct {
		node
		count int
	}
	var groups []group
	for _, nd := range nodes {
		if i := slices.IndexFunc(groups, func(g group) bool { return g.node == nd }); i >= 0 {
			groups[i].count++
			continue
		}
		groups = append(groups, group{nd, 1})
	}
	var b strings.Builder
	source := "made up in the trace's shape (scripts/openb-scale.go)"
	if real {
		source = "the trace's own node and pod lists"
	}
	fmt.Fprintf(&b, "# Alibaba's GPU cluster scaled to %d nodes, %s.\n", n, source)
	fmt.Fprintf(&b, "name: openb-%d\nseeds: [", n)
	for i := range seeds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, i+1)
	}
	b.WriteString("]\nsample: 24h\nreading_every: 1m\n\npolicies:\n  posted:\n    p: [[\"0\", \"0.0010\"]]\n\nservers:\n")
	for _, g := range groups {
		id := strings.ToLower(fmt.Sprintf("%s-%d", g.model, g.gpus))
		fmt.Fprintf(&b, "  - {id: %s, model: %s, memory_mib: %d, gpus: %d, replicas: %d, policy: posted}\n", id, g.model, cmp.Or(memory[g.model], 16384), g.gpus, g.count)
	}
	fmt.Fprintf(&b, "\ndefault_client:\n  budget: \"100000000\"\n  value: \"0.0040\"\n  strategy: %s\n  patience: 24h\n\nworkload:\n", strategy)
	if jobs > 0 {
		fmt.Fprintf(&b, "  jobs: %d\n", jobs)
	}
	b.WriteString("  trace: {format: alibaba, file: pods.csv, clients: 50}\n")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
}

func readCSV(file string) [][]string {
	f, err := os.Open(file)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	var recs [][]string
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatalf("%s: %v", file, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) < 2 {
		log.Fatalf("%s: no rows", file)
	}
	return recs
}

func columns(h []string) map[string]int {
	m := map[string]int{}
	for i, c := range h {
		m[strings.TrimSpace(c)] = i
	}
	return m
}
