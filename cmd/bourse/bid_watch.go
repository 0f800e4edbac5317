package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

func newBidWatchCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "watch ID",
		Short: "Follow a contract live: its state, use and running charge, until it settles",
		Long: `watch prints a line for each event of a contract: its state, and while it
runs the GPU-seconds used (U), the wall time (T) and the running charge due
against the prepayment. It ends when the contract settles (or is voided),
with the charge and the refund. --json prints each event as a JSON line.
An offer waiting in the book is followed there until a server accepts it
(then its contract is followed) or it leaves the book.`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			out := cmd.OutOrStdout()
			events, err := c.Watch(ctx, args[0])
			if bourse.ErrorCode(err) == bourse.ENotFound {
				// A waiting offer's id is its contract's to be: follow it
				// in the book until it has one.
				if werr := awaitMatch(ctx, out, c, f, f.command(cmd), args[0]); werr != nil {
					return werr
				}
				events, err = c.Watch(ctx, args[0])
			}
			if err != nil {
				return err
			}
			sc := newScales(ctx, c)
			for ev := range events {
				if f.json {
					if err := f.printJSONLine(out, ev); err != nil {
						return err
					}
					continue
				}
				printEvent(out, ev, sc)
			}
			// Settled or voided; or a signal stopped the watch, and the
			// contract goes on.
			return interrupted(ctx, fmt.Sprintf("the watch of %s (the contract goes on: watch it again to follow it)", args[0]))
		}),
	}
}

// printEvent writes one line per event, amounts at the currency's scale.
func printEvent(w io.Writer, ev bidder.Update, sc *scales) {
	k := ev.Contract
	cur := k.Terms.Currency
	at := ev.At.Local().Format("15:04:05")
	switch ev.Type {
	case protocol.EventAccepted:
		fmt.Fprintf(w, "%s  accepted  %s by %s; prepayment %s %s escrowed\n", at, k.ID, safe(k.Server), sc.amount(k.Terms.Prepayment, cur), cur)
	case protocol.EventStarted:
		fmt.Fprintf(w, "%s  running   on %s, GPUs %v%s%s\n", at, safe(k.Server), k.GPUs, metered(k.Meter), usage(k.Reading))
	case protocol.EventReading:
		fmt.Fprintf(w, "%s  running  %s  due %s of %s %s\n", at, usage(k.Reading), sc.amount(ev.Due, cur), sc.amount(k.Terms.Prepayment, cur), cur)
	case protocol.EventSettled:
		fmt.Fprintf(w, "%s  settled   %s%s: charged %s, refunded %s %s\n", at, safe(string(k.Reason)), usage(k.Reading), sc.amount(k.Charge, cur), sc.amount(k.Refund, cur), cur)
	case protocol.EventVoided:
		fmt.Fprintf(w, "%s  voided    %s: refunded %s %s\n", at, safe(string(k.Reason)), sc.amount(k.Refund, cur), cur)
	case protocol.EventSpendWarning:
		fmt.Fprintf(w, "%s  warning   %s\n", at, safe(ev.Warning))
	default:
		fmt.Fprintf(w, "%s  %s\n", at, safe(string(ev.Type)))
	}
}

func usage(r *contract.Reading) string {
	if r == nil {
		return ""
	}
	return fmt.Sprintf("  U %s GPU-s  T %s", r.U.StringFixed(1), time.Duration(r.T).Round(100*time.Millisecond))
}

// metered says how the server measures the job, where it said.
func metered(m contract.Meter) string {
	if m == "" {
		return ""
	}
	return ", metered by " + safe(string(m))
}
