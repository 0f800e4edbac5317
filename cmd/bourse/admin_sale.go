package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/treasury"
)

// newSaleCmds are the fixed-rate sale of a currency: its price, the
// prices set, and a sale.
func newSaleCmds(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) []*cobra.Command {
	var key string
	var asJSON bool

	price := &cobra.Command{
		Use:   "price",
		Short: "The fixed price at which a currency is sold for another",
		Long: `A currency's administrators may sell it at a fixed price in another currency:
real money, which enters the ledger as a currency of its own (EUR, granted
into the buyer's wallet when the payment arrives), or any other. "sell"
sells at the price set when it runs.`,
	}
	set := &cobra.Command{
		Use:   "set SOLD PAIDIN PRICE",
		Short: "Set the price of one unit of SOLD in PAIDIN (0 removes it: sales stop)",
		Args:  cobra.ExactArgs(3),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			p, err := amount("PRICE", args[2])
			if err != nil {
				return err
			}
			if err := requireKey(key, "price-cred-eur-2026-11"); err != nil {
				return err
			}
			a, err := t.SetPrice(ctx, actor, currency.Code(args[0]), currency.Code(args[1]), p, key)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "price %s: %s (was %s)\n", a.Target, orNone(a.After["price"]), orNone(a.Before["price"]))
			return nil
		}),
	}
	set.Flags().StringVar(&key, "key", "", "idempotency key: the same key sets the price once")
	price.AddCommand(set)

	prices := &cobra.Command{
		Use:   "prices",
		Short: "List the prices at which currencies are sold",
		Args:  cobra.NoArgs,
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, _ string, _ []string) error {
			ps, err := t.Prices(ctx)
			if err != nil {
				return err
			}
			return printList(cmd.OutOrStdout(), nil, asJSON, ps, "SOLD\tPAID IN\tPRICE\tSET BY\tSET AT", func(p treasury.Price) []any {
				return []any{p.Sold, p.PaidIn, p.Price, p.SetBy, p.SetAt.Format(time.RFC3339)}
			})
		}),
	}
	prices.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	sell := &cobra.Command{
		Use:   "sell BUYER SOLD PAIDIN AMOUNT",
		Short: "Sell AMOUNT of SOLD to BUYER at the price set, paid from BUYER's wallet in PAIDIN: both legs in one transaction, or neither",
		Long: `sell mints AMOUNT of SOLD into BUYER's wallet (opened if missing, under the
same organisation or project as its wallet in PAIDIN) and takes the cost,
AMOUNT × the price rounded up to PAIDIN's scale, from BUYER's wallet in
PAIDIN into the sale's proceeds wallet (wallet/PAIDIN/sales:SOLD). A buyer
who cannot pay gets insufficient_funds and nothing is done; the same key
again is the same sale.`,
		Args: cobra.ExactArgs(4),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			amount, err := amount("AMOUNT", args[3])
			if err != nil {
				return err
			}
			if err := requireKey(key, "sale-bob-2026-11-24"); err != nil {
				return err
			}
			buyer, sold, paidIn := args[0], currency.Code(args[1]), currency.Code(args[2])
			a, err := t.Sell(ctx, actor, buyer, sold, paidIn, amount, key)
			if err != nil {
				return err
			}
			sc := adminScales(ctx, t.Ledger())
			a = a.AtScale(sc.ofCode)
			if asJSON {
				return sc.printJSON(cmd.OutOrStdout(), a)
			}
			pw, sw := string(currency.WalletID(paidIn, buyer)), string(currency.WalletID(sold, buyer))
			fmt.Fprintf(cmd.OutOrStdout(), "sold %s %s to %s at %s %s for %s %s: %s %s → %s, %s %s → %s\n",
				sc.amount(amount, string(sold)), sold, buyer, a.After["price"], paidIn, a.After["cost"], paidIn,
				pw, orNone(a.Before[pw]), a.After[pw], sw, orNone(a.Before[sw]), a.After[sw])
			return nil
		}),
	}
	sell.Flags().StringVar(&key, "key", "", "idempotency key: the same key sells once")
	sell.Flags().BoolVar(&asJSON, "json", false, "print the action as JSON")
	return []*cobra.Command{price, prices, sell}
}
