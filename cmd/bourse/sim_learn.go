package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/sim"
	"github.com/bourse/bourse/sim/hindsight"
	"github.com/bourse/bourse/sim/report"
	"github.com/bourse/bourse/sim/workload"
)

func newSimLearnCmd() *cobra.Command {
	var (
		opt              hindsight.Options
		seeds            []uint
		out              string
		workers          int
		floor, ceiling   string
		trackEvery, jobs int
	)
	cmd := &cobra.Command{
		Use:   "learn SCENARIO",
		Short: "Run the learning policy against every fixed price of its grid, and the scenario's policies, on the same jobs and seeds",
		Long: `learn measures the learning policy (policy kind learning) against the best
fixed price in hindsight: every server posts each price of the learner's
grid (multiples of its curves) in a run of its own, then the learner runs,
then the scenario's other policies, each on every seed, on the same jobs.
The learner is the scenario's learning policy, or, where it has none, one
around its posted policy (--base). It prints the runs side by side (each seed's
best fixed price, the learner, the others), the revenue of each fixed
price, the learner's revenue and welfare as shares of the best fixed
price's on the same seed, on how many seeds it beat each other policy, and
its regret as the offers per server grow; the report folder has it all,
with regret.svg (log-log) and prices.svg. docs/sim.md records its results.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := scenario.Load(args[0])
			if err != nil {
				return err
			}
			for _, s := range seeds {
				opt.Seeds = append(opt.Seeds, uint64(s))
			}
			for _, f := range []struct {
				name, v string
				dst     *decimal.Decimal
			}{{"floor", floor, &opt.Floor}, {"ceiling", ceiling, &opt.Ceiling}} {
				if f.v == "" {
					continue
				}
				if *f.dst, err = decimal.NewFromString(f.v); err != nil {
					return usagef("--%s %q: want a multiplier like 0.5", f.name, f.v)
				}
			}
			opt.TrackEvery, opt.Jobs = trackEvery, jobs
			plans, setup, err := hindsight.Plans(sc, opt)
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("sim-out", sc.Name+"-learn")
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return fmt.Errorf("report folder: %w", err)
			}
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(400) // as bourse sim run: a simulation holds little
			}
			spec := sc.Workload
			if jobs > 0 {
				spec.Jobs = jobs
			}
			total, err := workload.Expected(spec, sc.Dir)
			if err != nil {
				return err
			}
			stderr := cmd.ErrOrStderr()
			prog := report.NewProgress(stderr, report.ProgressConfig{Terminal: report.IsTerminal(stderr)})
			bars := simBars{seen: make([]int, len(plans))}
			for _, p := range plans {
				bars.bars = append(bars.bars, prog.Bar(fmt.Sprintf("%s seed %d", p.Policy, p.Seed), total))
			}
			results, err := sim.RunAll(cmd.Context(), plans, workers, &bars)
			for _, b := range bars.bars {
				b.Done()
			}
			prog.Wait()
			if errors.Is(err, sim.ErrInterrupted) {
				return fmt.Errorf("%w: a benchmark cut short compares nothing; nothing written", err)
			}
			if err != nil {
				return err
			}
			r, err := hindsight.Analyse(results, setup)
			if err != nil {
				return err
			}
			if err := hindsight.Write(out, r); err != nil {
				return err
			}
			if err := hindsight.Table(cmd.OutOrStdout(), r); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "\n%s\nreport: %s\n", speed(results), filepath.Join(out, "index.html"))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opt.Learner, "learner", "", "the scenario's learning policy to measure (default: its first of kind learning)")
	f.StringVar(&opt.Base, "base", "", "for a scenario without a learning policy, the posted policy whose curves the grid multiplies (default posted)")
	f.StringVar(&floor, "floor", "", "the grid's least multiple of the base price (default 0.5)")
	f.StringVar(&ceiling, "ceiling", "", "the grid's greatest multiple of the base price (default 4)")
	f.IntVar(&opt.Levels, "levels", 0, "prices on the grid, floor and ceiling included (default 9)")
	f.DurationVar(&opt.Epoch, "epoch", 0, "how long the learner posts a price before it chooses again (default 15m)")
	f.DurationVar(&opt.MaxEpoch, "max-epoch", 0, "let the learner's epochs grow, as √ of the epochs since its first sweep, up to this (default: they do not grow)")
	f.StringSliceVar(&opt.Compare, "compare", nil, "the scenario's policies to run beside the learner (default: all but learners)")
	f.StringVar(&opt.Strategy, "strategy", "", "give every client this strategy (fixed, cheapest, adaptive, deadline) instead of its own")
	f.DurationVar(&opt.Patience, "patience", 0, "give every client this patience (how long a refused job waits to offer again) instead of its own")
	f.IntVar(&jobs, "jobs", 0, "at most this many jobs a run, instead of the scenario's")
	f.IntVar(&trackEvery, "track-every", 100, "note the takings every so many arrivals, for the regret curve")
	f.UintSliceVar(&seeds, "seed", nil, "run these seeds (repeat, or 1,2,3) instead of the scenario's")
	f.StringVarP(&out, "out", "o", "", "write the report to this folder (default sim-out/<scenario name>-learn)")
	f.IntVar(&workers, "parallel", 0, "runs at once (default: all cores)")
	return cmd
}
