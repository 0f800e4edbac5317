package scenario

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// feasible checks a generated workload against the market it runs in,
// before any run: a job the generator can make and no server can ever
// take (H100 jobs on an A100 cluster, eight GPUs where servers have
// four) would be refused at run time, every one, and a run whose jobs
// all fail that way still exits 0; a client in the workload's weights
// that the file does not describe would stop the run at its first job,
// far from the line that misspelt it. A trace cannot be checked without
// reading it all: the runs count its jobs that no server fits (the
// results' no_match) instead.
func (f *File) feasible() error {
	g := f.Workload.Generator
	if g == nil {
		return nil
	}
	if f.DefaultClient == nil {
		named := map[string]bool{}
		for _, c := range f.Clients {
			named[c.ID] = true
		}
		for _, id := range weighed(g.Clients) {
			if !named[id] {
				return fieldErr("workload.generator.clients."+id,
					"no client %q in clients (there are: %s), and no default_client to make one", id, strings.Join(slices.Sorted(maps.Keys(named)), ", "))
			}
		}
	}
	// The most GPUs one server of each model has, and of any model.
	largest, anyModel := map[string]int{}, 0
	for _, s := range f.Servers {
		largest[s.Model] = max(largest[s.Model], s.GPUs)
		anyModel = max(anyModel, s.GPUs)
	}
	models := weighed(g.Models)
	if len(models) == 0 {
		models = []string{""}
	}
	for _, m := range models {
		if m != "" && largest[m] == 0 {
			var have []string
			for _, h := range slices.Sorted(maps.Keys(largest)) {
				have = append(have, cmp.Or(h, "(none)"))
			}
			return fieldErr("workload.generator.models."+m, "no server has %s GPUs (the servers' models: %s): its jobs could never run",
				m, strings.Join(have, ", "))
		}
	}
	counts := weighed(g.GPUs)
	if len(counts) == 0 {
		counts = []int{1}
	}
	for _, n := range counts {
		for _, m := range models {
			most, of := largest[m], m+" "
			if m == "" {
				most, of = anyModel, ""
			}
			if n > most {
				return fieldErr("workload.generator.gpus."+strconv.Itoa(n), "jobs of %d %sGPUs could never run: the largest %sserver has %d",
					n, of, of, most)
			}
		}
	}
	return nil
}

// weighed lists the keys of weights with a positive weight, sorted.
func weighed[K int | string](weights map[K]float64) []K {
	var out []K
	for k, w := range weights {
		if w > 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
