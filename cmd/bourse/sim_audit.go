package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/sim/audit"
)

// errAudit is the error of an audit that found money that does not add
// up: the command's exit status says so after the report is printed.
var errAudit = errors.New("the contract log does not add up")

func newSimAuditCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "audit LOG...",
		Short: "Price every settled contract of contract logs again, independently, and check the money adds up",
		Long: `audit reads contract logs (bourse sim run --contract-log writes
contracts-<policy>-<seed>.jsonl into the report folder) and prices every
settled contract again from the terms on its accepted line and the final
reading on its settled line, with docs/pricing.md's formula implemented a
second time on exact rationals (package sim/audit), not with the code
that charged it. It checks that each charge and refund is what the formula
gives, that charge + refund = prepayment, that voided contracts were
refunded whole and that every contract ended once. It prints one line per
log and each line that does not add up, and exits 1 if any does.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			bad := false
			for _, path := range args {
				f, err := os.Open(path)
				if err != nil {
					return fmt.Errorf("audit: %w", err)
				}
				rep, err := audit.Check(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				fmt.Fprintf(out, "%s: %d contracts, %d settled and priced again, %d voided, %d left open; charged %s, refunded %s: ",
					path, rep.Accepted, rep.Settled, rep.Voided, rep.Open, rep.Charged, rep.Refunded)
				if rep.OK() {
					fmt.Fprintln(out, "adds up")
					continue
				}
				bad = true
				fmt.Fprintf(out, "%d mismatches\n", len(rep.Mismatches))
				for _, m := range rep.Mismatches {
					fmt.Fprintf(out, "  %s\n", m)
				}
			}
			if bad {
				return errAudit
			}
			return nil
		},
	}
}
