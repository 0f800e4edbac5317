package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/signing"
)

func newSigningKeyCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "signing-key SERVER --out FILE",
		Short: "Make a GPU server's key for signing its readings; prints the line for the exchange's --server-keys file",
		Long: `signing-key makes an nkey for a GPU server to sign its usage readings
with (bourse server's signing_key), writes its seed to --out (a secret:
keep it on that server), and prints "SERVER PUBLIC-KEY", the line to add to
the file the exchange reads with --server-keys. In operator mode a server's
credentials file signs too, and bourse admin nats-auth user writes its line.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := protocol.CheckID(args[0]); err != nil {
				return fmt.Errorf("server %q: %w", args[0], err)
			}
			if out == "" {
				return usagef("--out is required: the file the seed goes to")
			}
			seed, pub, err := signing.NewKey()
			if err != nil {
				return err
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				return usagef("--out: %w (a key is never overwritten)", err)
			}
			if _, err := f.Write(append(seed, '\n')); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", args[0], pub)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the file the seed is written to (not overwritten)")
	return cmd
}
