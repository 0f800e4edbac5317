package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// newBidShowCmd prints one contract in full, as scontrol show job does.
func newBidShowCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show one contract in full: terms, state, meter, last reading, charge, refund, where its output is",
		Long: `show prints everything the exchange says of one of your contracts: its
terms (GPUs, class, time limit, prices, prepayment, job), its state and why
it ended, its times, the GPUs it was given and how its server measures
them, the last reading counted (GPU-seconds used U, wall time T, share S,
energy, and the job's exit status once it ended), the charge and refund,
and how to read its output. --json prints the contract as the protocol
has it (docs/protocol.md, "contract"). An offer still waiting in the book
(offer --wait) is shown as it waits: its terms, what it is sure to pay,
how many offers are ahead of it and until when it waits (--json: as
bid waiting --json has it).

  bourse bid show c-3f9a363f20c7660bebf0`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			out := cmd.OutOrStdout()
			k, waits, err := f.contractOrWaiting(ctx, cmd, c, args[0])
			if err != nil || waits {
				return err
			}
			if f.json {
				return f.printJSON(out, k)
			}
			return printShow(out, k, f.scales, f.command(cmd))
		}),
	}
}

// printShow writes contract k as a field per line.
func printShow(w io.Writer, k protocol.ContractView, sc *scales, bid string) error {
	t, cur := k.Terms, k.Terms.Currency
	tw := table(w)
	line := func(name string, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	line("Contract", "%s", k.ID)
	line("Client", "%s", safe(k.Client))
	line("Server", "%s", safe(k.Server))
	state := string(k.State)
	if k.Reason != "" {
		state += " (" + safe(string(k.Reason)) + ")"
	}
	line("State", "%s", state)
	if r := k.Reading; r != nil && r.ExitCode != nil {
		line("Exit status", "%d", *r.ExitCode)
	}
	line("GPUs", "%d× %s", t.GPUs, classText(t.Class))
	if k.Model != "" {
		line("Model sold", "%s", safe(k.Model))
	}
	line("Time limit", "%s", t.TimeLimit)
	line("Price", "%s", sc.price(t))
	line("Prepayment", "%s %s", sc.amount(t.Prepayment, cur), cur)
	line("Preemptible", "%t", t.Preemptible)
	line("Job", "%s", jobText(k))
	if j := t.Job; j != nil && j.Files != nil {
		line("Files", "%s (%d bytes), unpacked in its working folder", j.Files.Digest, j.Files.Bytes)
	}
	if !t.StartAt.IsZero() {
		line("Start at", "%s", when(t.StartAt))
	}
	if k.Resumes != "" {
		line("Resumes", "%s", k.Resumes)
	}
	if !k.QueuedAt.IsZero() {
		line("Queued", "%s (waited %s in the book)", when(k.QueuedAt), k.AcceptedAt.Sub(k.QueuedAt).Round(time.Second))
	}
	line("Accepted", "%s", when(k.AcceptedAt))
	if k.StartedAt.IsZero() && !k.State.Ended() {
		line("Start by", "%s (voided if not started then)", when(k.StartDeadline))
	}
	if !k.StartedAt.IsZero() {
		line("Started", "%s", when(k.StartedAt))
	}
	if !k.SettledAt.IsZero() {
		line("Ended", "%s", when(k.SettledAt))
	}
	if len(k.GPUs) > 0 {
		line("Server GPUs", "%s", strings.Trim(fmt.Sprint(k.GPUs), "[]"))
	}
	if k.Meter != "" {
		line("Meter", "%s", safe(string(k.Meter)))
	}
	if r := k.Reading; r != nil {
		final := ""
		if r.Final {
			final = ", final"
		}
		line("Reading", "#%d at %s%s: U %s GPU-s, T %s, S %s, energy %s J", r.Seq, when(r.At), final,
			exact(r.U), time.Duration(r.T), exact(r.S), exact(r.EnergyJ))
		if scale, ok := sc.of(cur); ok {
			if due, ok := k.DueSoFar(scale); ok {
				line("Due so far", "%s %s", sc.amount(due, cur), cur)
			}
		}
	} else {
		line("Reading", "none yet")
	}
	if s := k.Stop; s != nil {
		line("Stop", "%s asked at %s; settles by %s", safe(string(s.Reason)), when(s.At), when(s.By))
	}
	if !k.SettlementDelayedSince.IsZero() {
		line("Settlement", "delayed since %s (it ends by the exchange's fixed rule)", when(k.SettlementDelayedSince))
	}
	line("Charge", "%s", sc.money(k.Charge, cur, k.State.Ended())+unit(k.State.Ended(), cur))
	line("Refund", "%s", sc.money(k.Refund, cur, k.State.Ended())+unit(k.State.Ended(), cur))
	line("Output", "%s", outputText(k, bid))
	if k.Signed != nil {
		line("Signed", "the last reading, by its server (show --json has it)")
	}
	return tw.Flush()
}

func unit(known bool, cur string) string {
	if !known {
		return ""
	}
	return " " + cur
}

// jobText says what the job is (contract.JobSpec.Describe), made safe:
// its words are the client's and the server's.
func jobText(k protocol.ContractView) string { return safe(k.Terms.Job.Describe(k.Image)) }

// outputText says where a contract's output is: its job's stdout and
// stderr and results, which the exchange relays to its client alone.
func outputText(k protocol.ContractView, bid string) string {
	if err := ranNoProgram(k, "output"); err != nil {
		return "none: " + bourse.ErrorMessage(err)
	}
	return fmt.Sprintf("stdout and stderr: %s logs %s; files left in $BOURSE_RESULTS: %s results %s DIR", bid, k.ID, bid, k.ID)
}

// newBidWaitCmd waits for a contract to end, for scripts, as sbatch
// --wait does.
func newBidWaitCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "wait ID",
		Short: "Wait for a contract to end, and exit with its job's exit status",
		Long: `wait follows one of your contracts (or a waiting offer, until it becomes
one) without printing its events, until it ends, then prints one line (the
contract with --json) and exits with:

  the job's own exit status, where the contract completed (its job
    ended by itself) and its server reported one; 0 where it completed
    without one (a synthetic job);
  if it ended otherwise (voided before it started, killed, suspended,
    preempted, its time limit or prepayment reached, its server lost,
    the job failed to start): the job's own status where it is not 0,
    else 1. A contract stopped at its time limit never exits 0, even
    where its job finished at that very moment: scripts that go on
    after "wait && …" go on after work that was done;

and, as every command, 2 for a command line that cannot be right, 3 if
the exchange said no (not_found: no such contract of yours; an offer that
left the book without a contract), 4 if NATS or the exchange did not
answer, 128 + the signal's number if a signal stopped the wait (the
contract goes on). A job's own status may be any of these numbers: show
--json tells them apart.

  bourse bid wait c-3f9a363f20c7660bebf0 && echo done`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			out := cmd.OutOrStdout()
			events, err := c.Watch(ctx, args[0])
			if bourse.ErrorCode(err) == bourse.ENotFound {
				if werr := awaitMatch(ctx, io.Discard, c, f, f.command(cmd), args[0]); werr != nil {
					return werr
				}
				events, err = c.Watch(ctx, args[0])
			}
			if err != nil {
				return err
			}
			var last protocol.ContractView
			for ev := range events {
				last = ev.Contract
			}
			if !last.State.Ended() {
				if err := interrupted(ctx, fmt.Sprintf("the wait for %s (the contract goes on)", args[0])); err != nil {
					return err
				}
				return &bourse.Error{Code: bourse.EUnavailable, Op: "bid.wait", Message: "the watch of " + args[0] + " ended before the contract did: wait again"}
			}
			if f.json {
				if err := f.printJSON(out, last); err != nil {
					return err
				}
			} else {
				printEnded(out, last, newScales(ctx, c))
			}
			if code := jobStatus(last); code != 0 {
				return exitCode(code)
			}
			return nil
		}),
	}
}

// jobStatus is what wait exits with for ended contract k: the job's own
// status if it completed, and never 0 if it did not.
func jobStatus(k protocol.ContractView) int {
	code := -1
	if r := k.Reading; r != nil && r.ExitCode != nil {
		code = *r.ExitCode & 0xff // what a process's status can carry
	}
	if k.State == contract.StateSettled && k.Reason == contract.ReasonCompleted {
		return max(code, 0)
	}
	if code > 0 {
		return code
	}
	// A job stopped (or one whose profile ran out as its time limit
	// came, which reports 0) did not complete as its contract goes.
	return exitFailure
}

// printEnded tells how contract k ended, in one line.
func printEnded(w io.Writer, k protocol.ContractView, sc *scales) {
	cur := k.Terms.Currency
	status := ""
	if r := k.Reading; r != nil && r.ExitCode != nil {
		status = fmt.Sprintf(", the job exited %d", *r.ExitCode)
	}
	fmt.Fprintf(w, "%s %s (%s)%s: charged %s, refunded %s %s\n", k.ID, k.State, safe(string(k.Reason)), status,
		sc.amount(k.Charge, cur), sc.amount(k.Refund, cur), cur)
}

// exitCode is an error that only sets the exit status: what was to be
// said is said already (bid wait's job status).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// asExitCode is err's status if it is an exitCode.
func asExitCode(err error) (int, bool) {
	var e exitCode
	if errors.As(err, &e) {
		return int(e), true
	}
	return 0, false
}

// contractOrWaiting reads contract id; or, where id is one of the
// client's offers waiting in the book (its contract's id to be, which
// watch, wait and cancel know too), prints that offer and says it waits.
func (f *bidFlags) contractOrWaiting(ctx context.Context, cmd *cobra.Command, c *bidder.Client, id string) (protocol.ContractView, bool, error) {
	k, err := c.Contract(ctx, id)
	if bourse.ErrorCode(err) == bourse.ENotFound {
		if w, ok := waitingOffer(ctx, c, id); ok {
			if f.json {
				return k, true, f.printJSON(cmd.OutOrStdout(), w)
			}
			return k, true, printShowWaiting(cmd.OutOrStdout(), w, f.scales, f.command(cmd))
		}
	}
	return k, false, err
}
