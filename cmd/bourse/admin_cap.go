package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
)

func newCapCmd(with func(func(context.Context, *cobra.Command, currency.Ledger, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "cap CLIENT GPUS",
		Short: "Cap the GPUs CLIENT may hold in contracts at once (checked inside each escrow)",
		Long: `cap sets how many GPUs a client may hold in contracts at once. The cap is a
wallet in the unit currency GPU-CAP: each contract reserves its GPUs from it
in the same ledger transaction as its prepayment's escrow, so that no
number of offers at once can pass it, and gives them back when it ends. An
offer past the cap gets cap_exceeded, saying how many are in use. Lowering
a cap below what is in use waits for contracts to end: it is refused until
then. --key makes the change idempotent, as a grant's.`,
		Args: cobra.ExactArgs(2),
		RunE: with(func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return fmt.Errorf("GPUS %q: want a whole number of GPUs, 0 or more", args[1])
			}
			if key == "" {
				return errors.New("--key is required: an idempotency key makes a repeated change safe (e.g. cap-alice-2026-12)")
			}
			if err := l.CreateCurrency(ctx, currency.Currency{Code: exchange.GPUCap, Scale: 0}); err != nil {
				return err
			}
			w := exchange.CapWallet(args[0])
			if _, err := l.OpenAccount(ctx, currency.Account{ID: w, Currency: exchange.GPUCap, Kind: currency.Wallet}); err != nil {
				return err
			}
			bal, err := l.Balance(ctx, w)
			if err != nil {
				return err
			}
			delta := decimal.NewFromInt(int64(n)).Sub(bal.Available.Add(bal.Held))
			t := currency.Transfer{Key: key, From: currency.IssuanceID(exchange.GPUCap), To: w, Amount: delta, Memo: fmt.Sprintf("cap of %s set to %d GPUs", args[0], n)}
			if delta.IsNegative() {
				if bal.Available.LessThan(delta.Neg()) {
					return fmt.Errorf("%s holds %s GPUs in contracts now: a cap of %d waits until they end", args[0], bal.Held, n)
				}
				t.From, t.To, t.Amount = w, currency.IssuanceID(exchange.GPUCap), delta.Neg()
			}
			if !delta.IsZero() {
				if _, err := currency.Do(ctx, l, t); err != nil {
					return err
				}
			}
			if bal, err = l.Balance(ctx, w); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s may hold %s GPUs at once; %s in use\n", args[0], bal.Available.Add(bal.Held), bal.Held)
			return nil
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: the same key changes the cap once")
	return cmd
}
