package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/treasury"
)

// The allowance rules kept in the database: set, remove, list.

func newAllowanceSetCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var cur, a, b, start, key string
	var period time.Duration
	cmd := &cobra.Command{
		Use:   "set OWNER --currency C --a A --b B",
		Short: "Give OWNER's wallet an allowance (or replace its allowance); the audit trail records it",
		Args:  cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			av, err := amount("--a", a)
			if err != nil {
				return err
			}
			bv, err := amount("--b", b)
			if err != nil {
				return err
			}
			from := time.Now().UTC().Truncate(time.Second)
			if start != "" {
				if from, err = time.Parse(time.RFC3339, start); err != nil {
					return usagef("--start %q: want RFC 3339, e.g. 2026-12-01T00:00:00Z", start)
				}
			}
			if err := requireKey(key, "allowance-alice-2026-12"); err != nil {
				return err
			}
			r := allowance.Rule{Wallet: currency.WalletID(currency.Code(cur), args[0]), A: av, B: bv, Period: period, Start: from}
			if _, err := t.SetAllowance(ctx, actor, r, key); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", r.Wallet, describeRule(r, adminScales(ctx, t.Ledger())))
			return nil
		}),
	}
	cmd.Flags().StringVar(&cur, "currency", "", "currency code")
	cmd.Flags().StringVar(&a, "a", "0", "paid per hour")
	cmd.Flags().StringVar(&b, "b", "0", "the share of the balance that decays per hour")
	cmd.Flags().DurationVar(&period, "period", time.Hour, "the payment period")
	cmd.Flags().StringVar(&start, "start", "", "the first period's start (RFC 3339; default now)")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: the same key sets the allowance once")
	_ = cmd.MarkFlagRequired("currency")
	return cmd
}

func newAllowanceRemoveCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var cur, key string
	cmd := &cobra.Command{
		Use:   "remove OWNER --currency C",
		Short: "Stop OWNER's allowance (what it paid stays)",
		Args:  cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			if err := requireKey(key, "allowance-alice-stop"); err != nil {
				return err
			}
			w := currency.WalletID(currency.Code(cur), args[0])
			a, err := t.RemoveAllowance(ctx, actor, w, key)
			if err != nil {
				return err
			}
			if a.Before["allowance"] == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "%s had no allowance\n", w)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: allowance removed\n", w)
			return nil
		}),
	}
	cmd.Flags().StringVar(&cur, "currency", "", "currency code")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key")
	_ = cmd.MarkFlagRequired("currency")
	return cmd
}

func newAllowanceListCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the allowances set, with their steady states and half-lives",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			rules, err := t.Allowances(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				type out struct {
					Wallet   currency.AccountID `json:"wallet"`
					A        decimal.Decimal    `json:"a"`
					B        decimal.Decimal    `json:"b"`
					PeriodS  float64            `json:"period_s"`
					Start    time.Time          `json:"start"`
					Steady   *decimal.Decimal   `json:"steady,omitempty"`
					HalfLife float64            `json:"half_life_s,omitempty"`
				}
				var os []out
				for _, r := range rules {
					o := out{Wallet: r.Wallet, A: r.A, B: r.B, PeriodS: r.Period.Seconds(), Start: r.Start}
					if s, ok := r.Steady(); ok {
						o.Steady, o.HalfLife = &s, r.HalfLife().Seconds()
					}
					os = append(os, o)
				}
				return printJSON(cmd.OutOrStdout(), os)
			}
			sc := adminScales(ctx, t.Ledger())
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WALLET\tRULE")
			for _, r := range rules {
				row(tw, r.Wallet, describeRule(r, sc))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// describeRule says what a rule does in a line. The steady state a/b, a
// level the balance tends to and never an amount held (it may not end),
// is rounded to the wallet's currency's places (2 where unknown).
func describeRule(r allowance.Rule, sc *scales) string {
	s := fmt.Sprintf("a = %s/h, b = %s/h, every %v from %s", r.A, r.B, r.Period, r.Start.Format(time.RFC3339))
	if st, ok := r.Steady(); ok {
		code, _ := r.Wallet.Currency()
		places, known := sc.ofCode(code)
		if !known {
			places = 2
		}
		s += fmt.Sprintf("; steady state %s, half-life %v", st.StringFixed(places), r.HalfLife().Round(time.Second))
	}
	return s
}
