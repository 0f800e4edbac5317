package main

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/market"
)

// newDemoGrantCmd asks a running demo's faucet for money: the demo's
// ledger lives in its process, where bourse admin grant cannot reach.
func newDemoGrantCmd() *cobra.Command {
	var (
		natsURL, id string
		asJSON      bool
		value       decimal.Decimal
	)
	cmd := &cobra.Command{
		Use:   "grant [AMOUNT]",
		Short: "Grant the demo's client you more money (100.00 CRED unless AMOUNT says), from the running demo's faucet",
		Long: `grant asks a running bourse demo for more money for the client the person at
the keyboard trades as (you): the demo's ledger lives inside its process,
where bourse admin grant, which needs the exchange's database, cannot
reach it. The demo grants at most 1000.00 CRED at a time, to you alone
(its bots live on their allowances), each grant recorded in its treasury's
audit trail as the faucet's. A real market's clients ask an administrator
(bourse admin grant).

  bourse demo grant --nats URL --id you 100`,
		Args: cobra.MaximumNArgs(1),
		PreRunE: func(_ *cobra.Command, args []string) error {
			value = keyboardBudget
			if len(args) == 1 {
				v, err := amount("AMOUNT", args[0])
				if err != nil {
					return err
				}
				value = v
			}
			if !value.IsPositive() {
				return usagef("AMOUNT %s: want more than 0", value)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			nc, err := nats.Connect(natsURL, nats.Name("bourse-demo-grant"))
			if err != nil {
				return &bourse.Error{Code: bourse.EUnavailable, Op: "demo.grant",
					Message: "connect to NATS at " + natsURL + " (bourse demo prints its URL; set --nats or BOURSE_NATS_URL)", Err: err}
			}
			defer nc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			r, err := market.AskFaucet(ctx, nc, id, value, newRequestID())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), r)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "granted %s %s to %s; available now %s %s\n", r.Granted, r.Currency, safe(id), r.Available, r.Currency)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats", nats.DefaultURL, "the demo's NATS URL (it prints it)")
	bindEnv(f, "nats", "BOURSE_NATS_URL")
	f.StringVar(&id, "id", keyboardClient, "the client to grant to: the demo's you")
	bindEnv(f, "id", "BOURSE_ID")
	f.BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
