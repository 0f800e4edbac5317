//go:build ignore

// openb-pod-sample.go writes openb-pod-sample.csv, a small trace in the
// format of Alibaba's cluster-trace-gpu-v2023 pod list
// (openb_pod_list_*.csv): the same columns and kinds of values, made up
// here from a fixed seed, not taken from Alibaba's data. It has what a
// replay of the real list meets and the generator's samples do not:
// CPU-only pods, pods never scheduled, pods deleted when scheduled, GPUs
// shared by milli, multi-model gpu_spec, "nan" for no model, four QoS
// classes, queueing between creation and scheduling, and a few pods that
// run for days. The acceptance run (make sim-trace) replays it.
//
//	go run examples/sim/traces/openb-pod-sample.go > examples/sim/traces/openb-pod-sample.csv
package main

import (
	"cmp"

	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"

	"github.com/bourse/bourse/internal/safecsv"
)

type pod struct {
	cpu, mem, gpus, milli       int
	spec, qos, phase            string
	created, deleted, scheduled int64 // scheduled < 0: never
}

func main() {
	rng := rand.New(rand.NewPCG(2023, 8152))
	const rows = 360
	const base, span = 9_400_000, 36 * 3600 // the trace's clock, seconds
	end := int64(base + span + 4*86400)     // pods still running are deleted at the trace's end
	pick := func(weights map[string]float64) string {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range weights {
				if !yield(k) {
					return
				}
			}
		})
		x := rng.Float64()
		for _, k := range keys {
			if x -= weights[k]; x < 0 {
				return k
			}
		}
		return keys[len(keys)-1]
	}
	var pods []pod
	t := float64(base)
	for range rows {
		// Bursts: a pod every 2 minutes for a while, then every 15.
		gap := 120.0
		if int(t-base)/(4*3600)%2 == 1 {
			gap = 900
		}
		t += -math.Log(1-rng.Float64()) * gap
		p := pod{created: int64(t), cpu: 1000 * (1 + rng.IntN(32)), mem: 1024 * (2 + rng.IntN(120))}
		p.qos = pick(map[string]float64{"LS": 0.45, "BE": 0.30, "Burstable": 0.20, "Guaranteed": 0.05})
		switch x := rng.Float64(); {
		case x < 0.13: // CPU-only
		case x < 0.73:
			p.gpus = 1
		case x < 0.83:
			p.gpus = 2
		case x < 0.91:
			p.gpus = 4
		default:
			p.gpus = 8
		}
		p.milli = 1000 * min(p.gpus, 1)
		if p.gpus == 1 && rng.Float64() < 0.4 {
			p.milli = 100 + 10*rng.IntN(81) // a share of one GPU
		}
		p.spec = "nan"
		if p.gpus > 0 && rng.Float64() < 0.35 {
			p.spec = pick(map[string]float64{"V100M16|V100M32": 0.3, "V100M32": 0.2, "T4": 0.15, "P100": 0.1, "G2": 0.15, "G3": 0.1})
			if (p.spec == "T4" || p.spec == "P100") && p.gpus > 4 {
				p.gpus = 4 // those servers have four
			}
		}
		run := int64(math.Exp(math.Log(1800)+1.6*rng.NormFloat64())) + 1
		run = min(run, 6*86400)
		switch x := rng.Float64(); {
		case x < 0.10: // never scheduled
			p.phase, p.scheduled, p.deleted = "Pending", -1, p.created+60+rng.Int64N(7200)
		case x < 0.11: // deleted as it was scheduled
			p.phase, p.scheduled = "Failed", p.created
			p.deleted = p.scheduled
		default:
			p.scheduled = p.created
			if rng.Float64() < 0.3 {
				p.scheduled += int64(-math.Log(1-rng.Float64()) * 120)
			}
			p.phase, p.deleted = "Succeeded", p.scheduled+run
			if p.deleted >= end {
				p.phase, p.deleted = "Running", end
			} else if rng.Float64() < 0.05 {
				p.phase = "Failed"
			}
		}
		pods = append(pods, p)
	}
	slices.SortStableFunc(pods, func(a, b pod) int { return cmp.Compare(a.created, b.created) })
	w := safecsv.NewWriter(os.Stdout)
	w.Write([]string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase", "creation_time", "deletion_time", "scheduled_time"})
	for i, p := range pods {
		sched := ""
		if p.scheduled >= 0 {
			sched = strconv.FormatInt(p.scheduled, 10)
		}
		w.Write([]string{fmt.Sprintf("openb-pod-%04d", i), strconv.Itoa(p.cpu), strconv.Itoa(p.mem), strconv.Itoa(p.gpus),
			strconv.Itoa(p.milli), p.spec, p.qos, p.phase, strconv.FormatInt(p.created, 10), strconv.FormatInt(p.deleted, 10), sched})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
