package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// openTreasury is the treasury beside an open exchange store's ledger,
// its caps' periods on the wall clock: an exchange in the same process
// takes the same (Treasury.Periods).
func openTreasury(ctx context.Context, s exchange.Store) (*treasury.Treasury, error) {
	return sqltreasury.Beside(ctx, s.Ledger(), caps.NewPeriods(time.Now))
}

// adminActor is who an administrative command acts as: --as, else
// $BOURSE_ADMIN, else the user running it. The audit trail records it.
func adminActor(cmd *cobra.Command) (string, error) {
	if as, _ := cmd.Flags().GetString("as"); as != "" {
		return as, nil
	}
	if as := os.Getenv("BOURSE_ADMIN"); as != "" {
		return as, nil
	}
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	return "", fmt.Errorf("who is acting? give --as NAME (or set BOURSE_ADMIN): the audit trail records it")
}
