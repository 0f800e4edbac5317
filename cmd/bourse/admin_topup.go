package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

func newTopUpCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topup",
		Short: "Top wallets up from their project's budget when they run low",
		Long: `A top-up moves money from a wallet's parent (its project's or organisation's
budget) into the wallet whenever "topup run" finds it below --below, back up
to --to: at most once per wallet per --every, however many schedulers run.
Run "topup run" from cron; each top-up is in the audit trail.`,
	}
	var cur, below, to, key string
	var every time.Duration
	set := &cobra.Command{
		Use:   "set OWNER --currency C --below B --to T",
		Short: "Top OWNER's wallet up from its parent wallet when it falls below B (--to 0 removes it)",
		Args:  cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			b, err := amount("--below", below)
			if err != nil {
				return err
			}
			tv, err := amount("--to", to)
			if err != nil {
				return err
			}
			if err := requireKey(key, "topup-alice-2026-12"); err != nil {
				return err
			}
			u := treasury.TopUp{Wallet: currency.WalletID(currency.Code(cur), args[0]), Below: b, To: tv, Every: every}
			if _, err := t.SetTopUp(ctx, actor, u, key); err != nil {
				return err
			}
			if tv.IsZero() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no top-up\n", u.Wallet)
				return nil
			}
			sc := adminScales(ctx, t.Ledger())
			fmt.Fprintf(cmd.OutOrStdout(), "%s: topped up to %s from its parent when below %s\n", u.Wallet, sc.amount(tv, cur), sc.amount(b, cur))
			return nil
		}),
	}
	set.Flags().StringVar(&cur, "currency", "", "currency code")
	set.Flags().StringVar(&below, "below", "0", "the threshold")
	set.Flags().StringVar(&to, "to", "0", "the level a top-up brings the wallet back to (0 removes the top-up)")
	set.Flags().DurationVar(&every, "every", time.Minute, "at most one top-up per wallet per this long")
	set.Flags().StringVar(&key, "key", "", "idempotency key")
	_ = set.MarkFlagRequired("currency")

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the top-ups set",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			ups, err := t.TopUps(ctx)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			return printList(cmd.OutOrStdout(), sc, asJSON, ups, "WALLET\tBELOW\tTO\tEVERY", func(u treasury.TopUp) []any {
				return []any{u.Wallet, sc.inAccount(u.Below, u.Wallet), sc.inAccount(u.To, u.Wallet), u.Every}
			})
		}),
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var at string
	run := &cobra.Command{
		Use:   "run",
		Short: "Top up every wallet below its threshold now, and list what this run did",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, _ []string) error {
			now := time.Now()
			if at != "" {
				var err error
				if now, err = time.Parse(time.RFC3339, at); err != nil {
					return usagef("--now %q: %w", at, err)
				}
			}
			done, err := t.RunTopUps(ctx, actor, now)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			if asJSON {
				return sc.printJSON(cmd.OutOrStdout(), done)
			}
			if len(done) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no wallet is below its threshold")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WALLET\tAMOUNT\tKEY\tERROR")
			for _, d := range done {
				row(tw, d.Wallet, sc.inAccount(d.Amount, d.Wallet), d.Key, d.Err)
			}
			return tw.Flush()
		}),
	}
	run.Flags().StringVar(&at, "now", "", "as of this time (RFC 3339) instead of now")
	run.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(set, list, run)
	return cmd
}
