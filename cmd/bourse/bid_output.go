package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// newBidLogsCmd prints a contract's stdout and stderr, as the job wrote
// them, from the exchange that relays them from the job's server.
func newBidLogsCmd(f *bidFlags) *cobra.Command {
	var follow bool
	cmd := &cobra.Command{
		Use:   "logs CONTRACT",
		Short: "Print a contract's job's stdout and stderr, while it runs and after it ends (--follow to follow)",
		Long: `logs prints what the job of one of your contracts wrote: its stdout to
stdout and its stderr to stderr, as it wrote them. Without --follow it
prints what has come so far and stops; with --follow it goes on as the job
writes, until the job has ended and all of its output has come.

Only the contract's client can read it: the server sends it to the
exchange, which hands it to no one else. The server keeps up to its
output cap of each stream (output_cap); the exchange keeps it for its
retention (7 days by default) within the server's quota. Output that
is missing (the server's quota pushed it out, or its age) is printed
around and named at the end, with exit status 1 (code output_lost).`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			end, err := c.FollowLogs(ctx, args[0], bidder.Follow{Wait: follow}, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			switch {
			case end == nil:
				k, err := c.Contract(ctx, args[0])
				switch {
				case err != nil:
				case ranNoProgram(k, "logs") != nil:
					return ranNoProgram(k, "logs")
				case follow:
				case !k.State.Ended():
					fmt.Fprintf(cmd.ErrOrStderr(), "bourse: the job is %s; more may come: bourse bid logs --follow %s\n", k.State, args[0])
				default:
					return notYet("the end of its output", "bourse bid logs --follow "+args[0])
				}
			case end != nil && end.Cap > 0 && (end.Stdout >= end.Cap || end.Stderr >= end.Cap):
				fmt.Fprintf(cmd.ErrOrStderr(), "bourse: the server keeps %d bytes of each stream; the job wrote more, which was dropped\n", end.Cap)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "go on printing as the job writes, until it has ended and all its output has come")
	return cmd
}

// ranNoProgram is the error for reading what (logs, results) of contract
// k, whose job wrote nothing for certain: its terms name no program, no
// program ran (the synthetic runner), or it never started. Its code,
// no_program, exits 3. Nil where a program ran or may yet run.
func ranNoProgram(k protocol.ContractView, what string) error {
	var why string
	switch {
	case k.Terms.Job == nil || (k.Terms.Job.Command == "" && k.Terms.Job.Image == ""):
		why = "its terms name no program and no image"
	case k.Meter == contract.MeterSynthetic:
		why = fmt.Sprintf("server %s ran a synthetic job (metered by synthetic), not %s", k.Server, cmp.Or(k.Terms.Job.Command, k.Terms.Job.Image))
	case k.State == contract.StateVoided:
		why = "it was voided before its job started"
	default:
		return nil
	}
	return &bourse.Error{Code: bourse.ENoProgram, Field: "contract",
		Message: fmt.Sprintf("contract %s ran no program, so it has no %s: %s", k.ID, what, why)}
}

// notYet is the error for an ended contract whose output's end has not
// come: its server sends it once the job's output is drained, and may be
// behind (restarting, cut off from NATS).
func notYet(what, again string) error {
	return &bourse.Error{Code: bourse.EUnavailable, Message: fmt.Sprintf("the job has ended and %s has not come yet: its server sends it when it can (%s waits for it)", what, again)}
}

// newBidResultsCmd fetches the files a contract's job left in
// $BOURSE_RESULTS into a folder.
func newBidResultsCmd(f *bidFlags) *cobra.Command {
	var (
		out      string
		wait     bool
		force    bool
		maxBytes int64
		maxFiles int
	)
	cmd := &cobra.Command{
		Use:   "results CONTRACT DIR",
		Short: "Fetch the files a contract's job left in $BOURSE_RESULTS into DIR",
		Long: `results fetches the files the job of one of your contracts left in the
folder $BOURSE_RESULTS names, once the job has ended, writes them into
DIR (made if missing; or -o DIR) and lists them. The server packs at most its
results cap (results_cap, 64 MiB by default), declared when the job
started, and names the files it left out; the exchange keeps them for its
retention (7 days by default) within the server's quota. With --wait it
waits for a job that is still running.

What a server sends is held to bounds before anything is written: the
archive must come whole and in order, within the cap the server declared
and --max-bytes; its files may hold no more bytes than the archive, and
number at most --max-files; only regular files and directories inside
DIR are written. A file already in DIR is not replaced unless --force is
given (then it is removed and written anew, as plain data): an archive
that names one is refused whole, and nothing is written.`,
		Args: cobra.RangeArgs(1, 2),
		PreRunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 2 {
				if out != "" && out != args[1] {
					return usagef("the folder is given twice, as %s and -o %s: keep one", args[1], out)
				}
				out = args[1]
			}
			if out == "" {
				return usagef("DIR is required: the folder to write the results into (bourse bid results CONTRACT DIR, or -o DIR)")
			}
			if maxBytes < 0 || maxFiles < 0 {
				return usagef("--max-bytes and --max-files may not be negative")
			}
			return nil
		},
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			tmp, err := os.CreateTemp("", "bourse-results-*.tar")
			if err != nil {
				return err
			}
			defer os.Remove(tmp.Name())
			defer tmp.Close()
			end, err := c.Results(ctx, args[0], bidder.Follow{Wait: wait, MaxBytes: maxBytes}, tmp)
			if err != nil {
				return err
			}
			if end == nil {
				k, err := c.Contract(ctx, args[0])
				switch {
				case err != nil:
					return err
				case ranNoProgram(k, "results") != nil:
					return ranNoProgram(k, "results")
				case !k.State.Ended():
					return &bourse.Error{Code: bourse.EUnavailable, Message: fmt.Sprintf("the job is %s: its results come once it ends (--wait waits for them)", k.State)}
				}
				return notYet("its results", "bourse bid results --wait")
			}
			size, err := tmp.Seek(0, io.SeekCurrent) // the archive's bytes, all written
			if err != nil {
				return err
			}
			if _, err := tmp.Seek(0, io.SeekStart); err != nil {
				return err
			}
			files, err := bidder.ExtractResults(tmp, out, bidder.Extract{MaxBytes: size, MaxFiles: maxFiles, Force: force})
			var replace *bidder.ReplaceError
			switch {
			case errors.As(err, &replace):
				return fmt.Errorf("%w; --force replaces them", err)
			case err != nil:
				for _, name := range files {
					fmt.Fprintf(cmd.ErrOrStderr(), "bourse: written before the failure: %s\n", safe(name))
				}
				return err
			}
			w := cmd.OutOrStdout()
			if f.json {
				return printJSON(w, struct {
					Dir     string              `json:"dir"`
					Files   []string            `json:"files"`
					Archive *protocol.OutputEnd `json:"archive"`
				}{out, append([]string{}, files...), end})
			}
			for _, name := range files {
				fmt.Fprintln(w, safe(name)) // the server named them
			}
			fmt.Fprintf(w, "%d files in %s (%d bytes archived)\n", len(files), out, end.Results)
			for _, o := range end.Omitted {
				fmt.Fprintf(cmd.ErrOrStderr(), "bourse: left out by the server: %s\n", safe(fmt.Sprint(o)))
			}
			return nil
		}),
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the folder to write the results into, as DIR")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for a job still running to end and its results to come")
	cmd.Flags().BoolVar(&force, "force", false, "replace files already in the folder (otherwise an archive that names one is refused)")
	cmd.Flags().Int64Var(&maxBytes, "max-bytes", 0, "the most bytes of results archive to take (default: the results cap the contract's server declared)")
	cmd.Flags().IntVar(&maxFiles, "max-files", bidder.DefaultMaxFiles, "the most files and directories to write")
	return cmd
}
