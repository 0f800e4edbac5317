package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/metrics"
	"github.com/bourse/bourse/sim/report"
	"github.com/bourse/bourse/sim/workload"
)

func newSimCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate a market offline to compare pricing and admission policies",
		Long: `sim runs a market offline, in this process, on a virtual clock: the
exchange's rules, the servers' policies, the bidders' strategies and the
ledger are the production code, without NATS, the database or waiting. A
scenario file (YAML) describes the servers, clients, policies and workload;
docs/sim.md describes every field and examples/sim has two scenarios.
The same scenario and seed write the same files, byte for byte.`,
	}
	cmd.AddCommand(newSimRunCmd(), newSimCompareCmd(), newSimLearnCmd(), newSimGenCmd(), newSimAuditCmd())
	return cmd
}

// simFlags are what run and compare share.
type simFlags struct {
	seeds    []uint
	out      string
	asJSON   bool
	logs     bool
	workers  int
	cpuprof  string
	standing string
	routeTo  []string
}

func (f *simFlags) add(cmd *cobra.Command) {
	cmd.Flags().UintSliceVar(&f.seeds, "seed", nil, "run these seeds (repeat, or 1,2,3) instead of the scenario's")
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "write the report (index.html, plots, CSV, JSON) to this folder (default sim-out/<scenario name>)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the results as JSON instead of a table")
	cmd.Flags().BoolVar(&f.logs, "contract-log", false, "also write each run's contract log (one JSON line per contract event) to the report folder")
	cmd.Flags().IntVar(&f.workers, "parallel", 0, "runs at once (default: all cores)")
	cmd.Flags().StringVar(&f.cpuprof, "cpuprofile", "", "write a CPU profile of the runs to this file (go tool pprof reads it)")
	cmd.Flags().StringSliceVar(&f.routeTo, "route-to", nil, "route each offer to at most N servers, or to all whose asks it meets (all), instead of the scenario's route_to; several (8,all) run side by side, labelled POLICY+route=N")
	cmd.Flags().StringVar(&f.standing, "standing", "off", "jobs no server takes at once wait in the exchange's book (on), in their client's queue (off), or run both ways side by side (both, labelled POLICY+standing)")
}

// routes are the routing bounds --route-to names (sim.RouteAll for all).
func (f simFlags) routes() ([]int, error) {
	var out []int
	for _, v := range f.routeTo {
		if v == "all" {
			out = append(out, sim.RouteAll)
			continue
		}
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > 100_000 {
			return nil, usagef("--route-to %q: want a number from 1 to 100000, or all", v)
		}
		out = append(out, k)
	}
	return out, nil
}

// modes are the standing-offer modes --standing names.
func (f simFlags) modes() ([]bool, error) {
	switch f.standing {
	case "off", "":
		return []bool{false}, nil
	case "on":
		return []bool{true}, nil
	case "both":
		return []bool{false, true}, nil
	}
	return nil, usagef("--standing %q: want off, on or both", f.standing)
}

func newSimRunCmd() *cobra.Command {
	var (
		f      simFlags
		policy string
	)
	cmd := &cobra.Command{
		Use:   "run SCENARIO",
		Short: "Run a scenario: each server with its own policy, or all with --policy",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var policies []string
			if policy != "" {
				policies = []string{policy}
			}
			return runSim(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], policies, f)
		},
	}
	f.add(cmd)
	cmd.Flags().StringVar(&policy, "policy", "", "give every server this policy from the scenario's policies")
	return cmd
}

func newSimCompareCmd() *cobra.Command {
	var (
		f        simFlags
		policies []string
	)
	cmd := &cobra.Command{
		Use:   "compare SCENARIO --policy A --policy B ...",
		Short: "Run a scenario under several policies, side by side (all its named policies by default)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(policies) == 0 {
				sc, err := scenario.Load(args[0])
				if err != nil {
					return err
				}
				policies = sc.PolicyNames()
				if len(policies) == 0 {
					return fmt.Errorf("%s names no policies to compare; add a policies: section or use bourse sim run", args[0])
				}
			}
			return runSim(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], policies, f)
		},
	}
	f.add(cmd)
	cmd.Flags().StringArrayVar(&policies, "policy", nil, "a policy from the scenario's policies (repeat)")
	return cmd
}

// runSim runs a scenario's plans in parallel with progress on stderr, then
// prints the table (or JSON) and writes the report folder.
func runSim(ctx context.Context, stdout, stderr io.Writer, path string, policies []string, f simFlags) error {
	sc, err := scenario.Load(path)
	if err != nil {
		return err
	}
	for _, p := range policies {
		if !slices.Contains(sc.PolicyNames(), p) {
			return usagef("--policy %q: %s has no such policy (it has %s)", p, sc.Name, strings.Join(sc.PolicyNames(), ", "))
		}
	}
	out := f.out
	if out == "" {
		out = filepath.Join("sim-out", sc.Name)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("report folder: %w", err)
	}
	modes, err := f.modes()
	if err != nil {
		return err
	}
	routes, err := f.routes()
	if err != nil {
		return err
	}
	opt := sim.PlanOptions{Standing: modes, RouteTo: routes}
	for _, s := range f.seeds {
		opt.Seeds = append(opt.Seeds, uint64(s))
	}
	if f.logs {
		opt.Log = func(policy string, seed uint64) (io.WriteCloser, error) {
			return os.Create(filepath.Join(out, fmt.Sprintf("contracts-%s-%d.jsonl", policy, seed)))
		}
	}
	plans, err := sim.Plans(sc, policies, opt)
	if err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" {
		// A simulation allocates at a great rate and holds little (what is
		// live): collecting at four times the live heap rather than twice
		// spends a fifth less of the run in the collector, for a heap a
		// constant factor larger. GOGC set in the environment wins.
		debug.SetGCPercent(400)
	}
	stopProfile, err := cpuProfile(f.cpuprof)
	if err != nil {
		return err
	}
	defer stopProfile()
	// The bars count arrivals, which the engine reaches however much
	// virtual time it skips between events: their rate and ETA hold. A
	// trace without a jobs limit counts its rows for a total.
	total, err := workload.Expected(sc.Workload, sc.Dir)
	if err != nil {
		return err
	}
	prog := report.NewProgress(stderr, report.ProgressConfig{Terminal: report.IsTerminal(stderr)})
	bars := simBars{seen: make([]int, len(plans))}
	for _, p := range plans {
		bars.bars = append(bars.bars, prog.Bar(fmt.Sprintf("%s seed %d", p.Policy, p.Seed), total))
	}
	results, err := sim.RunAll(ctx, plans, f.workers, &bars)
	for _, b := range bars.bars {
		b.Done() // those of runs that never started, after an error
	}
	prog.Wait()
	// Interrupted (SIGINT, SIGTERM): the runs stopped where they were,
	// and the report holds what they had.
	interrupted := errors.Is(err, sim.ErrInterrupted)
	if err != nil && (!interrupted || len(results) == 0) {
		return err
	}
	if err := report.Write(out, results); err != nil {
		return err
	}
	if f.asJSON {
		if err := report.JSON(stdout, results); err != nil {
			return err
		}
	} else {
		if err := report.Table(stdout, results); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n%s\nreport: %s\n", speed(results), filepath.Join(out, "index.html"))
	}
	if interrupted {
		return fmt.Errorf("%w; the report in %s holds the runs as far as they went", err, out)
	}
	return nil
}

// simBars moves a progress bar a run; each run's calls come from one
// goroutine, so each touches only its own bar and count.
type simBars struct {
	bars []*report.Bar
	seen []int
}

func (b *simBars) Arrived(plan, jobs int) {
	b.bars[plan].Add(jobs - b.seen[plan])
	b.seen[plan] = jobs
}

func (b *simBars) Finished(plan, jobs int) {
	b.Arrived(plan, jobs)
	b.bars[plan].Done()
}

// speed says how fast the runs went: the machine's figure, kept out of the
// report's files so that they stay the same from run to run.
func speed(rs []metrics.Result) string {
	var jobs int
	var wall float64
	for _, r := range rs {
		jobs += r.Summary.Jobs
		wall = max(wall, r.Summary.Wall)
	}
	parts := []string{fmt.Sprintf("%d runs, %d jobs", len(rs), jobs)}
	if wall > 0 {
		parts = append(parts, fmt.Sprintf("longest run %.1fs", wall))
		var rate float64
		for _, r := range rs {
			rate += r.Summary.JobsPerSec
		}
		parts = append(parts, fmt.Sprintf("%.0f jobs/s per run on average", rate/float64(len(rs))))
	}
	return strings.Join(parts, ", ")
}

func newSimGenCmd() *cobra.Command {
	var (
		format string
		out    string
		seed   uint
		jobs   int
	)
	cmd := &cobra.Command{
		Use:   "gen SCENARIO",
		Short: "Write a scenario's workload as a trace file (alibaba, helios or jsonl)",
		Long: `gen streams the jobs of a scenario's workload (its generator with the
given seed, or its trace) into a trace file in one of the formats the
simulator reads: alibaba (cluster-trace-gpu-v2023's pod list), helios
(the Helios/Philly job log) or jsonl (one Job a line). The same scenario
and seed write the same bytes. A trace written this way replays in a
scenario whose workload is trace: {format: ..., file: ...}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scenario.Load(args[0])
			if err != nil {
				return err
			}
			spec := sc.Workload
			if cmd.Flags().Changed("jobs") {
				spec.Jobs = jobs
			}
			f := workload.Format(format)
			if f != workload.Alibaba && f != workload.Helios && f != workload.JSONL {
				return usagef("--format %q: want alibaba, helios or jsonl", format)
			}
			src, closer, err := workload.Open(spec, sc.Dir, uint64(seed))
			if err != nil {
				return err
			}
			defer closer.Close()
			w, closeOut := cmd.OutOrStdout(), func() error { return nil }
			if out != "" && out != "-" {
				file, err := os.Create(out)
				if err != nil {
					return fmt.Errorf("gen: %w", err)
				}
				w, closeOut = file, file.Close
			}
			n, err := workload.Write(w, f, src)
			if err = errors.Join(err, closeOut()); err != nil {
				return fmt.Errorf("gen: after %d jobs: %w", n, err)
			}
			if out != "" && out != "-" {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d jobs written to %s (%s)\n", n, out, f)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "the trace format: alibaba, helios or jsonl")
	cmd.Flags().StringVarP(&out, "out", "o", "-", "the file to write (- for standard output)")
	cmd.Flags().UintVar(&seed, "seed", 1, "the generator's seed")
	cmd.Flags().IntVar(&jobs, "jobs", 0, "at most this many jobs, instead of the scenario's")
	return cmd
}
