package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/treasury"
)

func newCapCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "cap OWNER GPUS",
		Short: "Cap the GPUs a client, or every client under a project or organisation, may hold in contracts at once (checked inside each escrow)",
		Long: `cap sets how many GPUs a client may hold in contracts at once, or, for a
project or an organisation, all the clients whose wallets sit under it
together. The cap is a
wallet in the unit currency GPU-CAP: each contract reserves its GPUs from it
in the same ledger transaction as its prepayment's escrow, so that no
number of offers at once can pass it, and gives them back when it ends. An
offer past the cap gets cap_exceeded, saying how many are in use. Lowering
a cap below what is in use waits for contracts to end: it is refused until
then. --key makes the change idempotent, as a grant's.`,
		Args: cobra.ExactArgs(2),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			n, err := strconv.Atoi(args[1])
			if err != nil || n < 0 {
				return fmt.Errorf("GPUS %q: want a whole number of GPUs, 0 or more", args[1])
			}
			if key == "" {
				return usagef("--key is required: an idempotency key makes a repeated change safe (e.g. cap-alice-2026-12)")
			}
			if _, err := t.SetCap(ctx, actor, args[0], n, key); err != nil {
				return err
			}
			c, err := t.CapOf(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s may hold %d GPUs at once; %d in use\n", args[0], c.GPUs, c.InUse)
			return nil
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: the same key changes the cap once")
	return cmd
}
