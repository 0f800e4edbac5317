package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/treasury"
)

// newScheduleCmd is bourse admin schedule: one round of the treasury's
// scheduler, which every bourse exchange instance runs on its own.
func newScheduleCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "The treasury's scheduled actions: allowances, top-ups and spend-rate refills",
		Long: `Every bourse exchange instance runs the treasury's scheduled actions every
--schedule-every (10s): it pays the allowances' periods that have ended, tops
up the wallets below their thresholds and refills the spend-rate buckets.
Each action is done once, whichever instance (or cron job) gets there first,
and decides its amount in the transaction that moves the money, so running
it everywhere at once is safe. "schedule run" does one round now: for a
market without an exchange running, or from cron.`,
	}
	var at string
	var asJSON bool
	run := &cobra.Command{
		Use:   "run",
		Short: "Run the scheduled actions due now, once, and list what this run did",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, _ []string) error {
			now := time.Now()
			if at != "" {
				var err error
				if now, err = time.Parse(time.RFC3339, at); err != nil {
					return usagef("--now %q: %w", at, err)
				}
			}
			ran, err := treasury.NewScheduler(t, actor).Run(ctx, now)
			sc := adminScales(ctx, t.Ledger())
			if asJSON {
				if perr := sc.printJSON(cmd.OutOrStdout(), ran); perr != nil {
					return perr
				}
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ACTION\tACCOUNT\tAMOUNT\tKEY")
			lines := 0
			for _, w := range slices.Sorted(maps.Keys(ran.Allowances)) {
				for _, p := range ran.Allowances[w] {
					row(tw, "allowance", w, sc.inAccount(p.Amount, w), p.Key)
					lines++
				}
			}
			for _, u := range ran.TopUps {
				amount := sc.inAccount(u.Amount, u.Wallet)
				if u.Err != "" {
					amount = "failed: " + u.Err
				}
				row(tw, "topup", u.Wallet, amount, u.Key)
				lines++
			}
			for _, r := range ran.Refills {
				row(tw, "refill", r.Bucket, sc.inAccount(r.Amount, r.Bucket), fmt.Sprintf("%d steps", r.Steps))
				lines++
			}
			if lines == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing due")
			} else if ferr := tw.Flush(); ferr != nil {
				return ferr
			}
			return err
		}),
	}
	run.Flags().StringVar(&at, "now", "", "as of this time (RFC 3339) instead of now; nothing is paid before it is due by the database's clock")
	run.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(run)
	return cmd
}
