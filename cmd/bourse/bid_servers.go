package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// newBidServersCmd lists the live servers, as sinfo lists a cluster's
// nodes.
func newBidServersCmd(f *bidFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "List the live servers of your currency: GPUs free and in all, runner, meter, the programs they run",
		Long: `servers lists the GPU servers the exchange has heard from lately, in your
currency (--all: every currency), as each says of itself in its heartbeat:
its GPUs by model and memory, how many are free now, its runner (process:
real programs; synthetic: profiles only), the meter that measures its jobs,
the programs a job may name there (exactly as written: a job naming
"python3" is refused where the list says /usr/bin/python3) or the
sources of the images it pulls, whether it takes a job's files (offer
--files) and how large, its policy, and its ask: the least it takes now per GPU-second (and per
second), as its policy would counter an offer below it, which offers and
quotes are routed by ("no price" where its policy does not say; "-" from
a server that publishes no ask). --json lists every program and the
whole ask: per class of GPUs, the GPUs free and when busy ones free up.

  bourse bid servers
  bourse bid --json servers`,
		Args: cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			cur := f.currency
			if all {
				cur = ""
			}
			ss, err := c.Servers(ctx, cur)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				if ss == nil {
					ss = []protocol.Server{}
				}
				return printJSON(out, ss)
			}
			if len(ss) == 0 {
				fmt.Fprintf(out, "no live server in %s: a server speaks every second once it runs (bourse server)\n", or(cur, "any currency"))
				return nil
			}
			return printList(out, nil, false, ss, "SERVER\tCURRENCY\tGPUS\tFREE\tMODELS\tRUNNER\tMETER\tRUNS\tPOLICY\tASK\tRECORD\tHEARD", func(s protocol.Server) []any {
				runner, meter, runs := "-", "-", "-"
				if r := s.Runs; r != nil {
					runner, meter, runs = string(r.Runner), or(string(r.Meter), "none"), runsText(r)
				}
				return []any{s.ID, s.Currency, s.Total, s.Free, modelsText(s.GPUs), runner, meter, runs, or(oneLine(s.Policy), "-"), askText(s.Ask, s.Currency, f.scales),
					recordText(s.Record), time.Since(s.Seen).Round(time.Second).String() + " ago"}
			})
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "every currency's servers, not only --currency's")
	return cmd
}

// recordText is how a server kept its word lately: "started 9 of 10, 1
// lost in 1h0m0s", its canaries, "canaries 2 passed (1 since the last
// failure), 1 failed (worst +50%) in 7d", and "DEMOTED" where its record
// keeps offers from it; "-" where the exchange keeps none.
func recordText(r *protocol.Record) string {
	if r == nil {
		return "-"
	}
	s := fmt.Sprintf("started %d of %d", r.Started, r.Accepted)
	if r.NotStarted > 0 {
		s += fmt.Sprintf(", %d never", r.NotStarted)
	}
	if r.Lost > 0 {
		s += fmt.Sprintf(", %d lost", r.Lost)
	}
	s += " in " + time.Duration(r.Window).String()
	if c := r.Canaries; c != nil {
		var parts []string
		if c.Passed > 0 {
			p := fmt.Sprintf("%d passed", c.Passed)
			if c.Failed > 0 {
				// Passes before a failure do not outweigh it: say how
				// many came after, which is what restores a server.
				p += fmt.Sprintf(" (%d since the last failure)", c.PassedSince)
			}
			parts = append(parts, p)
		}
		if c.Failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", c.Failed))
		}
		if c.Worst != nil && !c.Worst.IsZero() && len(parts) > 0 {
			parts[len(parts)-1] += " (worst " + canary.Percent(*c.Worst) + ")"
		}
		if c.Inconclusive > 0 {
			parts = append(parts, fmt.Sprintf("%d inconclusive", c.Inconclusive))
		}
		s += "; canaries " + strings.Join(parts, ", ") + " in " + windowText(time.Duration(c.Window))
	}
	if r.Demoted {
		s += ", DEMOTED"
	}
	return s
}

// windowText is a window of whole days in days, "7d", else as Go writes
// a duration.
func windowText(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return fmt.Sprintf("%dd", d/day)
	}
	return d.String()
}

// modelsText is a server's GPUs, "8× H100 80 GiB, 2× L4 23 GiB".
func modelsText(gs []protocol.GPUCount) string {
	var parts []string
	for _, g := range gs {
		parts = append(parts, fmt.Sprintf("%d× %s %d GiB", g.Count, g.Model, (g.MemoryMiB+512)/1024))
	}
	return strings.Join(parts, ", ")
}

// runsText is what a server runs: a process runner's programs, or a
// container runner's image sources, the first three and how many more,
// and the largest image it pulls; what a synthetic runner runs is no
// program. A server that takes a job's files says how large.
func runsText(r *protocol.Runs) string {
	s := jobsText(r)
	if r.Files != nil {
		s += fmt.Sprintf("; files up to %d MiB", r.Files.MaxBytes>>20)
	}
	return s
}

func jobsText(r *protocol.Runs) string {
	firstThree := func(list []string) string {
		if len(list) > 3 {
			return strings.Join(list[:3], ", ") + fmt.Sprintf(" and %d more", len(list)-3)
		}
		return strings.Join(list, ", ")
	}
	switch {
	case r.Runner == protocol.RunnerSynthetic:
		return "(synthetic jobs)"
	case r.Runner == protocol.RunnerContainer:
		if r.Images == nil || len(r.Images.Allowed) == 0 {
			return "no image"
		}
		s := "images from " + firstThree(r.Images.Allowed)
		if r.Images.MaxBytes > 0 {
			s += fmt.Sprintf(" (at most %d MiB)", r.Images.MaxBytes>>20)
		}
		return s
	case len(r.Programs) == 0:
		return "none"
	}
	return firstThree(r.Programs)
}

// askText is a server's ask, per class of its GPUs: "0.3/GPU-s
// (1080.00/GPU-h)" for one class, "H100 0.3/GPU-s (…), L4 0.1/GPU-s (…)"
// for several; "no price" where a class names none, "-" without an ask.
func askText(a *protocol.Ask, cur string, sc *scales) string {
	if a == nil || len(a.Classes) == 0 {
		return "-"
	}
	var parts []string
	for _, c := range a.Classes {
		p := "no price"
		if c.Priced() {
			p = sc.price(contract.Terms{Currency: cur, P: c.P, Q: c.Q})
		}
		if len(a.Classes) > 1 {
			p = c.Model + " " + p
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}
