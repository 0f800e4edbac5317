package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/safecsv"
)

// parseDay reads a report bound: a date (UTC midnight) or an RFC 3339 time.
func parseDay(flag, s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--%s %q: a date (2026-11-01) or an RFC 3339 time", flag, s)
	}
	return t, nil
}

func newReportCmd(withStore func(func(context.Context, *cobra.Command, exchange.Store, []string) error) func(*cobra.Command, []string) error) *cobra.Command {
	var from, to, by, capacity, format string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Cost and GPU-seconds by organisation, project, client, GPU model and day or month; servers' sales and idle time; prices",
		Long: `report adds up the contracts accepted in [--from, --to) that have ended, each
in the day (or month) it was accepted: what each client's contracts on each
GPU model cost and used, under the project and organisation its wallet sits
in; what each server sold, and with --capacity its idle GPU-seconds (from its
first hello, as its revenue account says, up to now); and the
average price of a GPU-second. --format csv gives the cost lines for a
spreadsheet; json gives everything.`,
		Args: cobra.NoArgs,
		RunE: withStore(func(ctx context.Context, cmd *cobra.Command, s exchange.Store, _ []string) error {
			o := breakdown.Options{By: breakdown.By(by), Now: time.Now()}
			var err error
			if o.From, err = parseDay("from", from); err != nil {
				return err
			}
			if o.To, err = parseDay("to", to); err != nil {
				return err
			}
			if o.Capacity, err = breakdown.ParseCapacity(capacity); err != nil {
				return usagef("--capacity: %w", err)
			}
			r, err := breakdown.Build(ctx, s, s.Ledger(), o)
			if err != nil {
				return err
			}
			switch format {
			case "json":
				return adminScales(ctx, s.Ledger()).printJSON(cmd.OutOrStdout(), r)
			case "csv":
				return writeReportCSV(cmd.OutOrStdout(), r, adminScales(ctx, s.Ledger()))
			case "table":
				return writeReportTables(cmd.OutOrStdout(), r, ledgerScales(ctx, s.Ledger()))
			}
			return usagef("--format %q: table, csv or json", format)
		}),
	}
	today := time.Now().UTC().Format("2006-01-02")
	cmd.Flags().StringVar(&from, "from", time.Now().UTC().AddDate(0, 0, -6).Format("2006-01-02"), "first day (or RFC 3339 time), included")
	cmd.Flags().StringVar(&to, "to", time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02"), "last bound, excluded (default: the end of "+today+")")
	cmd.Flags().StringVar(&by, "by", "day", "day or month")
	cmd.Flags().StringVar(&capacity, "capacity", "", "servers' GPUs for their idle lines: gpu1=8,gpu2=4")
	cmd.Flags().StringVar(&format, "format", "table", "table, csv or json")
	return cmd
}

// writeReportTables writes r for people: every amount of money at its
// currency's scale (scaleOf; exactly where it is not known), so that 4
// CRED prints as 4.00 beside 1.83.
func writeReportTables(w io.Writer, r breakdown.Report, scaleOf func(code string) (int32, bool)) error {
	money := func(d decimal.Decimal, code string) string {
		scale, ok := scaleOf(code)
		if !ok {
			return exact(d) + " " + code
		}
		return currency.Format(d, scale) + " " + code
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PERIOD\tORG\tPROJECT\tCLIENT\tMODEL\tCONTRACTS\tGPU-SECONDS\tCOST")
	for _, l := range r.Lines {
		row(tw, l.Period, orDash(l.Org), orDash(l.Project), l.Client, l.Model, l.Contracts,
			l.GPUSeconds.StringFixed(1), money(l.Cost, l.Currency))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PERIOD\tSERVER\tCONTRACTS\tGPU-SECONDS SOLD\tREVENUE\tIDLE GPU-SECONDS")
	for _, s := range r.Servers {
		idle := "-"
		if s.Capacity.IsPositive() {
			idle = s.Idle.StringFixed(1)
		}
		row(tw, s.Period, s.Server, s.Contracts, s.GPUSeconds.StringFixed(1), money(s.Revenue, s.Currency), idle)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "PERIOD\tCURRENCY\tGPU-SECONDS\tCOST\tPER GPU-HOUR\tPER GPU-SECOND")
	for _, p := range r.Prices {
		scale, ok := scaleOf(p.Currency)
		if !ok {
			scale = -1
		}
		row(tw, p.Period, p.Currency, p.GPUSeconds.StringFixed(1), money(p.Cost, p.Currency), currency.FormatPrice(contract.PerHour(p.PerGPUSecond), scale), p.PerGPUSecond)
	}
	return tw.Flush()
}

// ledgerScales looks currencies' scales up in l, once each.
func ledgerScales(ctx context.Context, l currency.Ledger) func(string) (int32, bool) {
	known := map[string]int32{}
	return func(code string) (int32, bool) {
		if v, ok := known[code]; ok {
			return v, v >= 0
		}
		v := int32(-1)
		if c, err := l.Currency(ctx, currency.Code(code)); err == nil {
			v = c.Scale
		}
		known[code] = v
		return v, v >= 0
	}
}

func writeReportCSV(w io.Writer, r breakdown.Report, sc *scales) error {
	cw := safecsv.NewWriter(w)
	_ = cw.Write([]string{"period", "currency", "org", "project", "client", "model", "contracts", "gpu_seconds", "cost"})
	for _, l := range r.Lines {
		_ = cw.Write([]string{l.Period, l.Currency, l.Org, l.Project, l.Client, l.Model, strconv.Itoa(l.Contracts), l.GPUSeconds.String(), sc.amount(l.Cost, l.Currency)})
	}
	cw.Flush()
	return cw.Error()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
