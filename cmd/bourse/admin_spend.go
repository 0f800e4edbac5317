package main

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

func newSpendCapCmds(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) []*cobra.Command {
	var cur, period, warn, key string
	var asJSON bool
	set := &cobra.Command{
		Use:   "spend-cap OWNER LIMIT --currency C [--period hour|day|month] [--warn 0.8]",
		Short: "Cap what OWNER (a client, project or organisation) may commit per hour, day or month (0 removes the cap)",
		Long: `spend-cap limits what OWNER may commit in --currency per --period (UTC hours,
days or months; an hourly cap is a spend rate, in fixed windows): OWNER's own offers, and, for a project or organisation, those of
every client under it. Each offer reserves its whole prepayment from the
period's budget in the escrow's transaction, so the cap counts what running
contracts hold as well as what was charged, and cannot be raced; an offer
that does not fit gets cap_exceeded saying which cap, how much is used and
when it renews. The client whose offer takes a cap past --warn of it gets a
spend_warning event. A new limit applies to the period under way at once.
The exchange reads caps every 5 seconds.`,
		Args: cobra.ExactArgs(2),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			limit, err := amount("LIMIT", args[1])
			if err != nil {
				return err
			}
			w, err := decimal.NewFromString(warn)
			if err != nil {
				return usagef("--warn %q: a share such as 0.8", warn)
			}
			if err := requireKey(key, "spend-cap-acme-2026-12"); err != nil {
				return err
			}
			p := caps.Period(period)
			if _, err := t.SetSpendCap(ctx, actor, args[0], currency.Code(cur), p, limit, w, key); err != nil {
				return err
			}
			if limit.IsZero() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no %s spend cap in %s\n", args[0], p, cur)
				return nil
			}
			sc := adminScales(ctx, t.Ledger())
			fmt.Fprintf(cmd.OutOrStdout(), "%s may commit %s %s a %s; warned at %s%%\n", args[0], sc.amount(limit, cur), cur, p, w.Mul(decimal.NewFromInt(100)).Round(0))
			return nil
		}),
	}
	set.Flags().StringVar(&cur, "currency", "", "currency code")
	set.Flags().StringVar(&period, "period", string(caps.Day), "hour, day or month (UTC)")
	set.Flags().StringVar(&warn, "warn", "0.8", "share of the limit past which the client is warned (0 for never)")
	set.Flags().StringVar(&key, "key", "", "idempotency key: the same key sets the cap once")
	_ = set.MarkFlagRequired("currency")

	list := &cobra.Command{
		Use:   "spend-caps",
		Short: "List the spend caps and how much of each is used in the period under way",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			uses, err := t.SpendUses(ctx)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			return printList(cmd.OutOrStdout(), sc, asJSON, uses, "OWNER\tCURRENCY\tPERIOD\tLIMIT\tUSED\tHELD\tUSED%\tWARN%", func(u treasury.SpendUse) []any {
				cur := string(u.Currency)
				return []any{u.Owner, u.Currency, u.Period, sc.amount(u.Limit, cur), sc.amount(u.Used, cur), sc.amount(u.Held, cur), u.UsedPercent(), u.Warn.Mul(decimal.NewFromInt(100)).Round(0)}
			})
		}),
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return []*cobra.Command{set, list, newSpendRateCmd(withTreasury)}
}

func newSpendRateCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "spend-rate",
		Short: "Token buckets on spending: set one, or refill them",
		Long: `A spend rate is a token bucket on what an owner (a client, project or
organisation) may commit: offers reserve their prepayments from it in the
escrow's transaction, settlement takes the charge and gives back the rest,
and it refills at --per-hour up to its capacity, a minute at a time.
bourse exchange refills the buckets itself every 10 seconds; "spend-rate
refill" does it by hand (or from cron, where no exchange runs).
"bourse admin spend-caps" lists them with the caps (period "rate").`,
	}
	var cur, perHour, warn, key string
	set := &cobra.Command{
		Use:   "set OWNER CAPACITY --currency C --per-hour R [--warn 0.8]",
		Short: "Give OWNER's spending a token bucket of CAPACITY refilled at R an hour (CAPACITY 0 removes it)",
		Args:  cobra.ExactArgs(2),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			capacity, err := amount("CAPACITY", args[1])
			if err != nil {
				return err
			}
			rate, err := amount("--per-hour", perHour)
			if err != nil {
				return err
			}
			w, err := decimal.NewFromString(warn)
			if err != nil {
				return usagef("--warn %q: a share such as 0.8", warn)
			}
			if err := requireKey(key, "spend-rate-alice-1"); err != nil {
				return err
			}
			if _, err := t.SetSpendRate(ctx, actor, args[0], currency.Code(cur), capacity, rate, w, key); err != nil {
				return err
			}
			if capacity.IsZero() {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: no spend rate in %s\n", args[0], cur)
				return nil
			}
			sc := adminScales(ctx, t.Ledger())
			fmt.Fprintf(cmd.OutOrStdout(), "%s may commit up to %s %s at once, refilled at %s an hour\n", args[0], sc.amount(capacity, cur), cur, sc.amount(rate, cur))
			return nil
		}),
	}
	set.Flags().StringVar(&cur, "currency", "", "currency code")
	set.Flags().StringVar(&perHour, "per-hour", "0", "refill per hour")
	set.Flags().StringVar(&warn, "warn", "0.8", "share of the capacity used past which the client is warned (0 for never)")
	set.Flags().StringVar(&key, "key", "", "idempotency key")
	_ = set.MarkFlagRequired("currency")

	refill := &cobra.Command{
		Use:   "refill",
		Short: "Refill every bucket for the time passed since its last refill",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, _ []string) error {
			done, err := t.RunSpendRates(ctx, actor, time.Now())
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			for _, r := range done {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: +%s for %d steps\n", r.Bucket, sc.inAccount(r.Amount, r.Bucket), r.Steps)
			}
			if len(done) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "every bucket is refilled to now")
			}
			return nil
		}),
	}
	cmd.AddCommand(set, refill)
	return cmd
}
