package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

// newStuckCmd lists the contracts that hold their escrow and that the
// exchange's sweep fails to settle or void (docs/protocol.md, "Stuck
// contracts"): what an operator looks at when the gauge
// bourse_exchange_stuck_contracts is not zero.
func newStuckCmd(withStore func(func(context.Context, *cobra.Command, exchange.Store, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "stuck",
		Short: "List contracts that hold their escrow and fail to settle",
		Long: `stuck lists the contracts whose settlement or void keeps failing, the longest
stuck first, with the last error. The exchange retries each with backoff and,
after its --stuck-limit (1h) or when the escrow is due, ends it by the fixed
rule: settled on its last valid reading, else voided with a full refund.`,
		Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, cmd *cobra.Command, store exchange.Store, _ []string) error {
			cs, err := store.Stuck(ctx, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return adminScales(ctx, store.Ledger()).printJSON(out, cs)
			}
			if len(cs) == 0 {
				fmt.Fprintln(out, "no stuck contracts")
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "CONTRACT\tCLIENT\tSERVER\tSTATE\tPREPAYMENT\tSTUCK SINCE\tATTEMPTS\tNEXT TRY\tLAST ERROR")
			for _, c := range cs {
				st, scale := c.Stuck, int32(-1)
				if cur, err := store.Ledger().Currency(ctx, currency.Code(c.Terms.Currency)); err == nil {
					scale = cur.Scale
				}
				amount := currency.Format(c.Terms.Prepayment, scale)
				row(tw, c.ID, c.Client, c.Server, c.State,
					amount+" "+c.Terms.Currency, st.Since.Format(time.RFC3339), st.Attempts, st.Retry.Format(time.RFC3339), st.Error)
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts instead of a table")
	cmd.Flags().IntVar(&limit, "limit", 1000, "most contracts to list (0 for all)")
	return cmd
}
