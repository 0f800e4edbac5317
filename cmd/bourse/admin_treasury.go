package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/treasury"
)

// printMoved says what an action moved into or out of owner's wallet and
// where the wallet stands.
func printMoved(ctx context.Context, cmd *cobra.Command, l currency.Ledger, verb string, code currency.Code, owner string, amount decimal.Decimal) error {
	c, err := l.Currency(ctx, code)
	if err != nil {
		return err
	}
	b, err := l.Balance(ctx, currency.WalletID(code, owner))
	if err != nil {
		return err
	}
	prep := "to"
	if verb == "burned" {
		prep = "from"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s %s %s; available %s, held %s\n", verb, currency.Format(amount, c.Scale), code, prep, owner,
		currency.Format(b.Available, c.Scale), currency.Format(b.Held, c.Scale))
	return nil
}

func requireKey(key, example string) error {
	if key == "" {
		return usagef("--key is required: an idempotency key makes a repeated action safe (e.g. %s)", example)
	}
	return nil
}

// newTreasuryCmds are the administrators' commands beside grant: burn,
// rates and exchanges, the supply's history and the audit trail.
func newTreasuryCmds(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) []*cobra.Command {
	var cur, key, memo string
	var asJSON bool
	var limit int

	burn := &cobra.Command{
		Use:   "burn OWNER AMOUNT",
		Short: "Take AMOUNT out of OWNER's wallet and out of the money supply (a transfer to the issuance account)",
		Args:  cobra.ExactArgs(2),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			amount, err := amount("amount", args[1])
			if err != nil {
				return err
			}
			if err := requireKey(key, "burn-2026-11-alice"); err != nil {
				return err
			}
			if _, err := t.Burn(ctx, actor, currency.Code(cur), args[0], amount, key, memo); err != nil {
				return err
			}
			return printMoved(ctx, cmd, t.Ledger(), "burned", currency.Code(cur), args[0], amount)
		}),
	}
	burn.Flags().StringVar(&cur, "currency", "", "currency code")
	burn.Flags().StringVar(&key, "key", "", "idempotency key: the same key burns once")
	burn.Flags().StringVar(&memo, "memo", "", "a note for the statement")
	_ = burn.MarkFlagRequired("currency")

	rate := &cobra.Command{
		Use:   "rate FROM TO RATE",
		Short: "Set the rate at which FROM's money exchanges into TO's (units of TO per unit of FROM; 0 removes it)",
		Long: `rate sets one direction's rate; set the other direction separately (a spread
between the two is the exchange's fee). Exchanges use the rate set when they
run, and record it.`,
		Args: cobra.ExactArgs(3),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			r, err := amount("RATE", args[2])
			if err != nil {
				return err
			}
			if err := requireKey(key, "rate-cred-gpu-2026-11"); err != nil {
				return err
			}
			a, err := t.SetRate(ctx, actor, currency.Code(args[0]), currency.Code(args[1]), r, key)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "rate %s: %s (was %s)\n", a.Target, orNone(a.After["rate"]), orNone(a.Before["rate"]))
			return nil
		}),
	}
	rate.Flags().StringVar(&key, "key", "", "idempotency key: the same key sets the rate once")

	rates := &cobra.Command{
		Use:   "rates",
		Short: "List the exchange rates set",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			rs, err := t.Rates(ctx)
			if err != nil {
				return err
			}
			return printList(cmd.OutOrStdout(), nil, asJSON, rs, "FROM\tTO\tRATE\tSET BY\tSET AT", func(r treasury.ConversionRate) []any {
				return []any{r.From, r.To, r.Rate, r.SetBy, r.SetAt.Format(time.RFC3339)}
			})
		}),
	}
	rates.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	exch := &cobra.Command{
		Use:   "exchange OWNER FROM TO AMOUNT",
		Short: "Exchange AMOUNT of OWNER's FROM money into TO at the rate set: both legs in one ledger operation, or neither",
		Args:  cobra.ExactArgs(4),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			amount, err := amount("AMOUNT", args[3])
			if err != nil {
				return err
			}
			if err := requireKey(key, "exchange-alice-2026-11-24"); err != nil {
				return err
			}
			from, to := currency.Code(args[1]), currency.Code(args[2])
			a, err := t.Convert(ctx, actor, args[0], from, to, amount, key)
			if err != nil {
				return err
			}
			a = a.AtScale(adminScales(ctx, t.Ledger()).ofCode)
			fw, tw := string(currency.WalletID(from, args[0])), string(currency.WalletID(to, args[0]))
			fmt.Fprintf(cmd.OutOrStdout(), "exchanged at %s: %s %s → %s, %s %s → %s\n", a.After["rate"],
				fw, orNone(a.Before[fw]), a.After[fw], tw, orNone(a.Before[tw]), a.After[tw])
			return nil
		}),
	}
	exch.Flags().StringVar(&key, "key", "", "idempotency key: the same key exchanges once")

	supply := &cobra.Command{
		Use:   "supply CURRENCY",
		Short: "The history of a currency's money supply: every mint and burn",
		Args:  cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, args []string) error {
			ps, err := t.Supply(ctx, currency.Code(args[0]), limit)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			return printList(cmd.OutOrStdout(), sc, asJSON, ps, "AT\tCHANGE\tSUPPLY\tACCOUNT\tKEY\tMEMO", func(p treasury.SupplyPoint) []any {
				return []any{p.At.Format(time.RFC3339), signed(p.Change, sc.amount(p.Change, args[0])), sc.amount(p.Supply, args[0]), p.Account, p.Key, oneLine(p.Memo)}
			})
		}),
	}
	supply.Flags().IntVar(&limit, "limit", 100, "the last LIMIT changes (0 for all)")
	supply.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	var before string
	log := &cobra.Command{
		Use:   "log",
		Short: "The audit trail: every administrative action, who did it, when, under which key, and what it changed",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			as, err := t.Actions(ctx, before, limit)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			for i := range as {
				as[i] = as[i].AtScale(sc.ofCode)
			}
			// A rule reads as allowance list writes it; --json keeps it
			// as the trail stores it.
			rule := func(r allowance.Rule) string { return describeRule(r, sc) }
			return printList(cmd.OutOrStdout(), sc, asJSON, as, "AT\tACTOR\tACTION\tTARGET\tKEY\tCHANGED", func(a treasury.Action) []any {
				return []any{a.At.Format(time.RFC3339), a.Actor, a.Kind, a.Target, a.Key, a.Described(rule).Changes()}
			})
		}),
	}
	log.Flags().IntVar(&limit, "limit", 50, "how many actions")
	log.Flags().StringVar(&before, "before", "", "list the actions before the one with this key (the next page)")
	log.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return []*cobra.Command{burn, rate, rates, exch, supply, log}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

var errNoRules = errors.New("no allowances are set: set one with bourse admin allowance set, or give --rules FILE")
