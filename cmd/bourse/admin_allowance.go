package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/treasury"
)

// allowanceFile is a rules file: the allowances a scheduler pays.
type allowanceFile struct {
	Allowances []struct {
		Wallet   string          `yaml:"wallet"` // the owner, as bourse admin open names it
		Currency string          `yaml:"currency"`
		A        decimal.Decimal `yaml:"a"` // paid per hour
		B        decimal.Decimal `yaml:"b"` // decay per hour
		Period   time.Duration   `yaml:"period"`
		Start    time.Time       `yaml:"start"`
	} `yaml:"allowances"`
}

func readAllowances(path string) ([]allowance.Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("allowances: %w", err)
	}
	var f allowanceFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("allowances %s: %w", path, err)
	}
	var rules []allowance.Rule
	seen := map[currency.AccountID]bool{}
	for i, a := range f.Allowances {
		r := allowance.Rule{Wallet: currency.WalletID(currency.Code(a.Currency), a.Wallet), A: a.A, B: a.B, Period: a.Period, Start: a.Start}
		if a.Wallet == "" || a.Currency == "" {
			return nil, fmt.Errorf("allowances %s: allowances[%d]: wallet and currency are required", path, i)
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("allowances %s: allowances[%d]: %w", path, i, err)
		}
		if seen[r.Wallet] {
			// Its periods' keys are the wallet's: two rules would pay under
			// one key.
			return nil, fmt.Errorf("allowances %s: allowances[%d]: %s has an allowance already; a wallet has one", path, i, r.Wallet)
		}
		seen[r.Wallet] = true
		rules = append(rules, r)
	}
	return rules, nil
}

func newAllowanceCmd(with func(func(context.Context, *cobra.Command, currency.Ledger, []string) error) func(*cobra.Command, []string) error,
	withTreasury func(treasuryRun) func(*cobra.Command, []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "allowance",
		Short: "Allowances dx/dt = a − b·x: set, list, preview and pay them",
		Long: `An allowance pays a wallet a per hour and decays its balance by b per hour, so
that an idle wallet tends to a/b; with a = 0 it halves every ln2/b.

` + treasury.AllowancesPaid + `

Each period's key is allowance/<wallet>/v<version>/<n>: a late or repeated
run pays what is due, once, and nothing before a period has ended by the
database's clock. The rules are kept in the database ("allowance set",
recorded in the audit trail); "run --rules FILE" sets the file's rules
first (each once: a rule changed in the file replaces the one set) and
then pays.`,
	}
	var a, b, from, previewCur string
	var period time.Duration
	var places int32
	preview := &cobra.Command{
		Use:   "preview --a A --b B [--currency CODE | --places N]",
		Short: "Show where an allowance takes a balance: its steady state a/b, half-life, and the balance over time",
		Long: `preview shows where an allowance takes a balance, at the currency's places:
--currency CODE reads them from the ledger's database (--db), --places N
gives them without one; 2 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			av, err := decimal.NewFromString(a)
			if err != nil {
				return usagef("--a %q: %w", a, err)
			}
			bv, err := decimal.NewFromString(b)
			if err != nil {
				return usagef("--b %q: %w", b, err)
			}
			x0, err := decimal.NewFromString(from)
			if err != nil {
				return usagef("--from %q: %w", from, err)
			}
			if places < 0 || places > currency.MaxScale {
				return usagef("--places %d: want 0 to %d", places, currency.MaxScale)
			}
			r := allowance.Rule{Wallet: "preview", A: av, B: bv, Period: period, Start: time.Unix(0, 0)}
			if err := r.Validate(); err != nil {
				return err
			}
			if previewCur == "" {
				return printPreview(cmd.OutOrStdout(), r, x0, places)
			}
			if cmd.Flags().Changed("places") {
				return usagef("--places with --currency: the currency has its own places; give one of them")
			}
			return with(func(ctx context.Context, cmd *cobra.Command, l currency.Ledger, _ []string) error {
				c, err := l.Currency(ctx, currency.Code(previewCur))
				if err != nil {
					return fmt.Errorf("--currency %s: %w", previewCur, err)
				}
				return printPreview(cmd.OutOrStdout(), r, x0, c.Scale)
			})(cmd, args)
		},
	}
	preview.Flags().StringVar(&a, "a", "0", "paid per hour")
	preview.Flags().StringVar(&b, "b", "0", "the share of the balance that decays per hour")
	preview.Flags().StringVar(&from, "from", "0", "the balance to start from")
	preview.Flags().DurationVar(&period, "period", time.Hour, "the payment period")
	preview.Flags().StringVar(&previewCur, "currency", "", "the allowance's currency: amounts at its places, read from the ledger's database (--db)")
	preview.Flags().Int32Var(&places, "places", 2, "decimal places of the amounts, without a database (--currency reads them)")

	var rulesFile, at string
	var asJSON bool
	var rules []allowance.Rule
	run := &cobra.Command{
		Use:   "run [--rules FILE]",
		Short: "Pay every period that has ended of the allowances set (setting those in FILE first), and list what this run paid",
		Args:  cobra.NoArgs,
		// The rules of a file are read before the database is opened, so
		// that a mistake in them is what the command says.
		PreRunE: func(*cobra.Command, []string) (err error) {
			if rulesFile != "" {
				rules, err = readAllowances(rulesFile)
			}
			return err
		},
		RunE: withTreasury(func(ctx context.Context, cmd *cobra.Command, t *treasury.Treasury, actor string, _ []string) error {
			var err error
			now := time.Now()
			if at != "" {
				if now, err = time.Parse(time.RFC3339, at); err != nil {
					return usagef("--now %q: %w", at, err)
				}
			}
			if rulesFile != "" {
				// Each rule of the file is set once: the key names its
				// content, so the same file sets nothing again, and a rule
				// changed in it replaces the one set.
				for _, r := range rules {
					sum := sha256.Sum256([]byte(fmt.Sprintf("%s %s %s %s %s", r.Wallet, r.A, r.B, r.Period, r.Start.UTC().Format(time.RFC3339Nano))))
					if _, err := t.SetAllowance(ctx, actor, r, fmt.Sprintf("allowance-file/%s/%x", r.Wallet, sum[:8])); err != nil {
						return err
					}
				}
			} else if rules, err = t.Allowances(ctx); err != nil {
				return err
			}
			if len(rules) == 0 {
				return errNoRules
			}
			type line struct {
				Wallet currency.AccountID `json:"wallet"`
				Period int64              `json:"period"`
				Amount decimal.Decimal    `json:"amount"`
				Key    string             `json:"key"`
			}
			var made []line
			paid, err := t.PayAllowances(ctx, now)
			if err != nil {
				return err
			}
			for _, w := range slices.Sorted(maps.Keys(paid)) {
				for _, p := range paid[w] {
					if p.New {
						made = append(made, line{w, p.Period, p.Amount, p.Key})
					}
				}
			}
			sc := adminScales(ctx, t.Ledger())
			if asJSON {
				return sc.printJSON(cmd.OutOrStdout(), made)
			}
			if len(made) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing due: every period that has ended is paid")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WALLET\tPERIOD\tAMOUNT\tKEY")
			for _, m := range made {
				row(tw, m.Wallet, m.Period, sc.inAccount(m.Amount, m.Wallet), m.Key)
			}
			return tw.Flush()
		}),
	}
	run.Flags().StringVar(&rulesFile, "rules", "", "set the allowances of this file first (YAML: allowances: [{wallet, currency, a, b, period, start}])")
	run.Flags().StringVar(&at, "now", "", "pay as of this time (RFC 3339) instead of now")
	run.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.AddCommand(newAllowanceSetCmd(withTreasury), newAllowanceRemoveCmd(withTreasury), newAllowanceListCmd(withTreasury))
	cmd.AddCommand(preview, run)
	return cmd
}

func dayString(d time.Duration) string {
	switch {
	case d == 0:
		return "now"
	case d < 24*time.Hour:
		return d.String()
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}

// printPreview writes where r takes a balance of x0, amounts at places.
func printPreview(out io.Writer, r allowance.Rule, x0 decimal.Decimal, places int32) error {
	if s, ok := r.Steady(); ok {
		fmt.Fprintf(out, "steady state a/b: %s\nhalf-life: %v\n", s.StringFixed(places), r.HalfLife().Round(time.Second))
	} else {
		fmt.Fprintf(out, "no steady state (b = 0): %s a day, without limit\n", r.A.Mul(decimal.NewFromInt(24)).StringFixed(places))
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "AFTER\tBALANCE")
	for _, after := range []time.Duration{0, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour, 30 * 24 * time.Hour} {
		fmt.Fprintf(tw, "%s\t%s\n", dayString(after), r.Project(x0, after, places).StringFixed(places))
	}
	return tw.Flush()
}
