package main

import (
	"cmp"
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/treasury"
)

// treasuryRun is a command that acts through the treasury as actor.
type treasuryRun func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error

// adminDB is what every admin command runs on: the ledger's database, named
// by the --db flag.
type adminDB struct{ dbURL string }

// newAdminCmd is the administrators' console: it works on the ledger's
// database directly (the exchange need not run), through the same ledger
// rules as everything else.
func newAdminCmd() *cobra.Command {
	a := &adminDB{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Administer currencies, wallets and money on the ledger's database",
		Long: `admin works on the ledger's database directly, through the same rules as the
exchange: every movement is a double-entry transfer under an idempotency key.`,
	}
	cmd.PersistentFlags().StringVar(&a.dbURL, "db", "", "ledger database: postgres://… (PostgreSQL or CockroachDB; the password may come from $PGPASSWORD or ~/.pgpass instead of the URL); every command but nats-config needs it")
	bindEnv(cmd.PersistentFlags(), "db", "DATABASE_URL")
	cmd.PersistentFlags().String("as", "", "the administrator acting, for the audit trail (default $BOURSE_ADMIN, else your user name)")

	cmd.AddCommand(newCurrencyCmd(a.withTreasury), newOpenCmd(a.withTreasury), newGrantCmd(a.withTreasury),
		newBalanceCmd(a.with), newStatementCmd(a.with), newAuditCmd(a.with), newStuckCmd(a.withStore), newAdminContractsCmd(a.withStore), newAdminCancelCmd(a.withStore),
		newNATSConfigCmd(), newNATSAuthCmd(), newSigningKeyCmd(), newAllowanceCmd(a.with, a.withTreasury), newCapCmd(a.withTreasury))
	cmd.AddCommand(newTreasuryCmds(a.withTreasury)...)
	cmd.AddCommand(newSaleCmds(a.withTreasury)...)
	cmd.AddCommand(newSpendCapCmds(a.withTreasury)...)
	cmd.AddCommand(newReportCmd(a.withStore), newTopUpCmd(a.withTreasury), newScheduleCmd(a.withTreasury))
	cmd.AddCommand(newAdminCanaryCmd(a.withStore))
	return cmd
}

// withStore runs a command on the exchange's store, opened for it.
func (a *adminDB) withStore(run func(ctx context.Context, cmd *cobra.Command, s exchange.Store, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if a.dbURL == "" {
			return usagef("--db (or $DATABASE_URL) is required: the ledger's postgres:// URL")
		}
		if a.dbURL == "mem" {
			return usagef(`admin needs the exchange's database: an in-memory ledger ("mem") lives only inside its own process`)
		}
		store, closeStore, err := openStore(cmd.Context(), a.dbURL, commandLogger(cmd))
		if err != nil {
			return err
		}
		defer closeStore()
		return run(cmd.Context(), cmd, store, args)
	}
}

// with runs a command on the store's ledger, which is what most commands
// need.
func (a *adminDB) with(run func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, args []string) error) func(*cobra.Command, []string) error {
	return a.withStore(func(ctx context.Context, cmd *cobra.Command, s exchange.Store, args []string) error {
		return run(ctx, cmd, s.Ledger(), args)
	})
}

// withTreasury runs a command that acts as an administrator: through the
// treasury, which records who did what in the audit trail.
func (a *adminDB) withTreasury(run treasuryRun) func(*cobra.Command, []string) error {
	return a.withStore(func(ctx context.Context, cmd *cobra.Command, s exchange.Store, args []string) error {
		actor, err := adminActor(cmd)
		if err != nil {
			return err
		}
		t, err := openTreasury(ctx, s)
		if err != nil {
			return err
		}
		return run(ctx, cmd, t, actor, args)
	})
}

// newCurrencyCmd creates a currency.
func newCurrencyCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var scale int32
	var key string
	cmd := &cobra.Command{
		Use:   "currency CODE",
		Short: "Create a currency (and its issuance account); the audit trail records it",
		Args:  cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			k := cmp.Or(key, "currency/"+args[0])
			if _, err := t.CreateCurrency(ctx, actor, currency.Currency{Code: currency.Code(args[0]), Scale: scale}, k); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "currency %s, %d decimal places\n", args[0], scale)
			return nil
		}),
	}
	cmd.Flags().Int32Var(&scale, "scale", 2, "decimal places of every amount")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key (default currency/<code>)")
	return cmd
}

// newOpenCmd opens a wallet or a revenue account.
func newOpenCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var cur, parent, kind, key string
	cmd := &cobra.Command{
		Use:   "open OWNER",
		Short: "Open a client's wallet (or, with --kind revenue, a revenue account)",
		Long: `open opens OWNER's wallet in --currency, under --parent's wallet if given
(organisation → project → client: spending and reports roll up). Opening
again does nothing; with another parent it is a conflict.`,
		Args: cobra.ExactArgs(1),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			code := currency.Code(cur)
			var id currency.AccountID
			switch kind {
			case string(currency.Revenue):
				if parent != "" {
					return usagef("--parent: only wallets have parents")
				}
				id = currency.RevenueID(code, args[0])
				if _, err := t.OpenRevenue(ctx, actor, code, args[0], cmp.Or(key, treasury.OpenKey(id))); err != nil {
					return err
				}
			case string(currency.Wallet):
				id = currency.WalletID(code, args[0])
				if _, err := t.Open(ctx, actor, code, args[0], parent, cmp.Or(key, treasury.OpenKey(id))); err != nil {
					return err
				}
			default:
				return usagef("--kind %q: wallet or revenue", kind)
			}
			got, err := t.Ledger().Account(ctx, id)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%s %s) opened %s\n", got.ID, got.Currency, got.Kind, got.Created.Format(time.RFC3339))
			return nil
		}),
	}
	cmd.Flags().StringVar(&cur, "currency", "", "currency code")
	cmd.Flags().StringVar(&parent, "parent", "", "owner of the parent wallet (organisation → project)")
	cmd.Flags().StringVar(&kind, "kind", string(currency.Wallet), "wallet or revenue")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key (default open/<account>)")
	_ = cmd.MarkFlagRequired("currency")
	return cmd
}

// newGrantCmd mints money into a wallet.
func newGrantCmd(withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	var cur, key, memo string
	cmd := &cobra.Command{
		Use:   "grant OWNER AMOUNT",
		Short: "Mint AMOUNT into OWNER's wallet (a transfer from the issuance account)",
		Args:  cobra.ExactArgs(2),
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, args []string) error {
			amount, err := amount("amount", args[1])
			if err != nil {
				return err
			}
			if key == "" {
				return usagef("--key is required: an idempotency key makes a repeated grant safe (e.g. grant-2026-11-alice)")
			}
			code := currency.Code(cur)
			if _, err := t.Grant(ctx, actor, code, args[0], amount, key, memo); err != nil {
				return grantHint(err, code, args[0])
			}
			return printMoved(ctx, cmd, t.Ledger(), "granted", code, args[0], amount)
		}),
	}
	cmd.Flags().StringVar(&cur, "currency", "", "currency code")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key: the same key grants once")
	cmd.Flags().StringVar(&memo, "memo", "", "a note for the statement")
	_ = cmd.MarkFlagRequired("currency")
	return cmd
}

// newBalanceCmd shows an account's balance.
func newBalanceCmd(with func(func(context.Context, *cobra.Command, currency.Ledger, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "balance ACCOUNT",
		Short: "Show an account's balance (e.g. wallet/CRED/alice, revenue/CRED/gpu1, issuance/CRED)",
		Args:  cobra.ExactArgs(1),
		RunE: with(func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, args []string) error {
			b, err := l.Balance(ctx, currency.AccountID(args[0]))
			if err != nil {
				return err
			}
			c, err := l.Currency(ctx, b.Currency)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: available %s %s, held %s\n", b.Account, currency.Format(b.Available, c.Scale), b.Currency, currency.Format(b.Held, c.Scale))
			return nil
		}),
	}
}

// newStatementCmd shows an account's statement.
func newStatementCmd(with func(func(context.Context, *cobra.Command, currency.Ledger, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "statement ACCOUNT",
		Short: "Show an account's statement with running balances",
		Args:  cobra.ExactArgs(1),
		RunE: with(func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, args []string) error {
			a, err := l.Account(ctx, currency.AccountID(args[0]))
			if err != nil {
				return err
			}
			c, err := l.Currency(ctx, a.Currency)
			if err != nil {
				return err
			}
			es, err := l.Statement(ctx, a.ID, 0, 1000)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "SEQ\tAT\tAMOUNT\tBALANCE\tCOUNTERPARTY\tKEY\t")
			for _, e := range es {
				row(tw, e.Seq, e.At.Format(time.RFC3339), currency.Format(e.Amount, c.Scale),
					currency.Format(e.Balance, c.Scale), e.Counterparty, e.Key, "") // AlignRight: every cell ends with a tab
			}
			return tw.Flush()
		}),
	}
}

// newAuditCmd checks the ledger's invariants.
func newAuditCmd(with func(func(context.Context, *cobra.Command, currency.Ledger, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{
		Use:   "audit",
		Short: "Check every invariant of the ledger; exit 1 if one is broken",
		Args:  cobra.NoArgs,
		RunE: with(func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, _ []string) error {
			r, err := l.Audit(ctx)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), r)
			if !r.OK() {
				return fmt.Errorf("%d invariants broken", len(r.Violations))
			}
			return nil
		}),
	}
}
