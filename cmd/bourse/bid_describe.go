package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// newBidDescribeCmd shows a contract with its history, as kubectl
// describe does: show's fields, then what happened to it and the money
// it moved in the client's wallet.
func newBidDescribeCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "describe ID",
		Short: "Show a contract in full with its history: what happened to it, when, and the money it moved (kubectl describe)",
		Long: `describe prints what show prints of one of your contracts, then its events
in order (waiting in the book, accepted, started, the last reading, a stop
asked, settled or voided: protocol.History, from the exchange's record,
which keeps the last reading, not each) and the lines of your wallet's
statement that its prepayment's hold moved (escrow, refund). --json prints
{"contract", "events", "money"}, money at its currency's places.

  bourse bid describe c-3f9a363f20c7660bebf0`,
		Args: cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			out := cmd.OutOrStdout()
			k, waits, err := f.contractOrWaiting(ctx, cmd, c, args[0])
			if err != nil || waits {
				return err
			}
			entries, err := holdEntries(ctx, c, k.Terms.Currency, currency.HoldID(k.ID))
			if err != nil {
				return err
			}
			events := protocol.History(k)
			if f.json {
				if entries == nil {
					entries = []currency.Entry{}
				}
				return f.printJSON(out, struct {
					Contract protocol.ContractView `json:"contract"`
					Events   []protocol.Happening  `json:"events"`
					Money    []currency.Entry      `json:"money"`
				}{k, events, entries})
			}
			if err := printShow(out, k, f.scales, f.command(cmd)); err != nil {
				return err
			}
			return printHistory(out, events, entries, f.scales, k.Terms.Currency)
		}),
	}
}

// holdEntries are the lines of the client's statement in cur that hold
// moved, read page by page.
func holdEntries(ctx context.Context, c *bidder.Client, cur string, hold currency.HoldID) ([]currency.Entry, error) {
	var out []currency.Entry
	after := int64(0)
	for {
		es, err := c.Statement(ctx, cur, after, 500)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if e.Hold == hold {
				out = append(out, e)
			}
		}
		if len(es) < 500 {
			return out, nil
		}
		after = es[len(es)-1].Seq
	}
}

// printHistory writes a contract's events and the money its hold moved.
func printHistory(w io.Writer, events []protocol.Happening, entries []currency.Entry, sc *scales, cur string) error {
	fmt.Fprintln(w, "\nEvents:")
	tw := table(w)
	for _, h := range events {
		fmt.Fprintf(tw, "  %s\t%s\n", when(h.At), safe(h.What))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nMoney (your wallet's statement):")
	if len(entries) == 0 {
		fmt.Fprintln(w, "  none")
		return nil
	}
	tw = table(w)
	for _, e := range entries {
		fmt.Fprintf(tw, "  %s\t%s %s\t%s\n", when(e.At), signed(e.Amount, sc.amount(e.Amount, cur)), cur, oneLine(e.Memo))
	}
	return tw.Flush()
}
