package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// bidFlags are the flags every `bourse bid` command shares.
type bidFlags struct {
	natsURL, id string
	login       natsLogin
	currency    string
	json        bool
	timeout     time.Duration
	tls         natsTLS
	// scales are the currencies' scales, which the exchange tells the
	// connected client, for printing money.
	scales *scales
}

// newBidCmd is the client's console: offers, contracts, events, wallet.
func newBidCmd() *cobra.Command {
	f := &bidFlags{}
	cmd := &cobra.Command{
		Use:   "bid",
		Short: "Trade as a client: make offers, watch and stop contracts, read your wallet",
		Long: `bid speaks to the exchange over NATS as one client (--id, or $BOURSE_ID):
it makes offers and takes counter-offers, lists, watches, suspends, kills and
resumes contracts, and reads the client's balance and statement. Output is a
table for people, or JSON with --json for scripts.

Try it against the demo market, as its client "you", whom it funds and none
of its bots (ada … hal) trades as:

  bourse demo --duration 5m --quiet               # prints its NATS URL
  export BOURSE_NATS_URL=URL BOURSE_ID=you        # or --nats URL --id you on each command
  bourse bid offer --gpus 1 --model H100 --price 0.35 --duration 10s --time-limit 1m
  bourse bid watch CONTRACT_ID
  bourse bid offer --gpus 2 --auto cheapest --value 0.40 --duration 10s --time-limit 1m
  bourse bid balance
  bourse demo grant 100                           # more money for you, in the demo

docs/cli.md is the whole of it.

An offer escrows the most it can cost unless --prepayment says less: every
GPU busy for the whole --time-limit (10m by default) at its price.

The connection settings (--nats, --id, the NATS login and TLS files,
--currency) come from the flags, else the environment (each flag's help
names its variable), else the context in use (bourse context).`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&f.natsURL, "nats", nats.DefaultURL, "NATS server URL(s), comma-separated")
	pf.StringVar(&f.id, "id", "", "your client name")
	bindEnv(pf, "nats", "BOURSE_NATS_URL", "NATS_URL")
	bindEnv(pf, "id", "BOURSE_ID", "BOURSE_CLIENT")
	f.login.addFlags(pf)
	f.tls.addFlags(pf)
	pf.StringVar(&f.currency, "currency", bidder.DefaultCurrency, "currency of offers, balance and statement")
	bindEnv(pf, "currency", "BOURSE_CURRENCY")
	pf.BoolVar(&f.json, "json", false, "print JSON for scripts instead of tables")
	pf.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for each answer of the exchange")
	markContext(cmd, pf)

	cmd.AddCommand(newBidOfferCmd(f), newBidQuoteCmd(f), newBidWaitingCmd(f), newBidCancelCmd(f), newBidResumeCmd(f), newBidContractsCmd(f), newBidShowCmd(f), newBidDescribeCmd(f), newBidWatchCmd(f), newBidWaitCmd(f), newBidServersCmd(f),
		newBidControlCmd(f, protocol.VerbSuspend), newBidControlCmd(f, protocol.VerbKill),
		newBidBalanceCmd(f), newBidStatementCmd(f), newBidLogsCmd(f), newBidResultsCmd(f))
	return cmd
}

// with runs fn with a client connected as --id, and adds to its error what
// to do about it.
func (f *bidFlags) with(fn func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if f.id == "" {
			return usagef("--id is required: the client name your wallet is under (or set BOURSE_ID, or keep it in a context: bourse context add NAME --nats URL --id ID)")
		}
		tlsOpts, err := f.tls.options()
		if err != nil {
			return err
		}
		loginOpts, err := f.login.options()
		if err != nil {
			return err
		}
		c, err := bidder.Dial(bidder.Config{
			ID: f.id, URL: f.natsURL, Currency: f.currency, Timeout: f.timeout,
			Options: append(loginOpts, tlsOpts...),
		})
		if err != nil {
			switch bourse.ErrorCode(err) {
			case bourse.EUnavailable:
				if strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "x509") {
					return fmt.Errorf("%w; NATS refused the TLS handshake: --nats-ca must be the CA that signed its certificate, and where it verifies clients give --nats-cert and --nats-key", err)
				}
				return fmt.Errorf("%w; is NATS running at %s? (bourse demo prints its URL; set --nats or BOURSE_NATS_URL)", err, f.natsURL)
			case bourse.EPermission:
				return fmt.Errorf("%w; check --nats-user and --nats-password (or its file), or --nats-creds", err)
			}
			return err
		}
		defer c.Close()
		f.scales = newScales(cmd.Context(), c)
		return advise(fn(cmd.Context(), cmd, c, args), f)
	}
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSON writes v as indented JSON, its money at its currency's scale
// ("0.50", not the wire's "0.5"): protocol.AtScale, with the scales the
// exchange tells.
func (f *bidFlags) printJSON(w io.Writer, v any) error {
	b, err := f.jsonAtScale(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// printJSONLine writes v as one line of JSON (--json's events), its money
// at scale.
func (f *bidFlags) printJSONLine(w io.Writer, v any) error {
	b, err := f.jsonAtScale(v)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, b); err != nil {
		return err
	}
	line.WriteByte('\n')
	_, err = w.Write(line.Bytes())
	return err
}

func (f *bidFlags) jsonAtScale(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || f.scales == nil {
		var out bytes.Buffer
		if err == nil {
			err = json.Indent(&out, b, "", "  ")
			out.WriteByte('\n')
		}
		return out.Bytes(), err
	}
	return protocol.AtScale(b, f.currency, f.scales.of)
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

// printList prints items as JSON (its money at places where sc is given),
// or as a table: header (tab-separated column names), then the cells of
// each item (row).
func printList[T any](w io.Writer, sc *scales, asJSON bool, items []T, header string, cells func(T) []any) error {
	if asJSON && sc != nil {
		return sc.printJSON(w, items)
	}
	if asJSON {
		return printJSON(w, items)
	}
	tw := table(w)
	fmt.Fprintln(tw, header)
	for _, it := range items {
		row(tw, cells(it)...)
	}
	return tw.Flush()
}

// when formats a time for tables, "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func newBidContractsCmd(f *bidFlags) *cobra.Command {
	var (
		limit         int
		output        string
		state, server string
		since         string
		from          time.Time
	)
	cmd := &cobra.Command{
		Use:   "contracts",
		Short: "List your contracts, newest first (-o wide for more columns, -o json)",
		Long: `contracts lists your contracts, newest first: a table, or with -o wide one
with the GPU model, the price per GPU-hour, the GPU-seconds used and when
each started and ended, or with -o json (or --json) the contracts as the
protocol has them, money at its currency's places. Of the newest --limit,
--state keeps those in one state (accepted, running, settled, voided),
--server those of one server, --since those accepted since a time (a
duration ago, 24h, or a time). A running contract's charge is the amount
due so far, marked ~. (bourse admin contracts lists every client's.)`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			switch output {
			case "", "wide", "json":
			default:
				return usagef("-o %q: want wide or json (or leave it out for the table)", output)
			}
			if state != "" && !slices.Contains([]contract.State{contract.StateAccepted, contract.StateRunning, contract.StateSettled, contract.StateVoided}, contract.State(state)) {
				return usagef("--state %q: want accepted, running, settled or voided", state)
			}
			if since != "" {
				var err error
				if from, err = parseSince("--since", since, time.Now()); err != nil {
					return err
				}
			}
			return nil
		},
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			cs, err := c.Contracts(ctx, limit)
			if err != nil {
				return err
			}
			fetched := len(cs)
			cs = slices.DeleteFunc(cs, func(k protocol.ContractView) bool {
				return state != "" && string(k.State) != state || server != "" && k.Server != server || k.AcceptedAt.Before(from)
			})
			out := cmd.OutOrStdout()
			if f.json || output == "json" {
				if cs == nil {
					cs = []protocol.ContractView{}
				}
				return f.printJSON(out, cs)
			}
			if len(cs) == 0 && fetched > 0 {
				fmt.Fprintf(out, "none of your newest %d contracts is one the filters keep (--limit for more)\n", fetched)
				return nil
			}
			if len(cs) == 0 {
				fmt.Fprintln(out, "no contracts yet: make one with bourse bid offer")
				return nil
			}
			sc := f.scales
			tw := table(out)
			if output == "wide" {
				fmt.Fprintln(tw, "ID\tSERVER\tSTATE\tREASON\tGPUS\tMODEL\tPRICE/GPU-H\tPREPAYMENT\tCHARGE\tREFUND\tGPU-S USED\tACCEPTED\tSTARTED\tENDED")
			} else {
				fmt.Fprintln(tw, "ID\tSERVER\tSTATE\tREASON\tGPUS\tPREPAYMENT\tCHARGE\tREFUND\tACCEPTED")
			}
			for _, k := range cs {
				cur := k.Terms.Currency
				charge := sc.money(k.Charge, cur, k.State.Ended())
				if due, ok := dueSoFar(k, sc); ok {
					charge = "~" + due
				}
				if output == "wide" {
					used := "-"
					if r := k.Reading; r != nil {
						used = r.U.StringFixed(1)
					}
					row(tw, k.ID, k.Server, k.State, or(string(k.Reason), "-"), k.Terms.GPUs, modelText(k), sc.hourText(k.Terms),
						sc.amount(k.Terms.Prepayment, cur), charge, sc.money(k.Refund, cur, k.State.Ended()), used, when(k.AcceptedAt), when(k.StartedAt), when(k.SettledAt))
					continue
				}
				row(tw, k.ID, k.Server, k.State, or(string(k.Reason), "-"), k.Terms.GPUs,
					sc.amount(k.Terms.Prepayment, cur), charge, sc.money(k.Refund, cur, k.State.Ended()), when(k.AcceptedAt))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 50, "how many to list")
	cmd.Flags().StringVarP(&output, "output", "o", "", "wide for more columns, json for JSON")
	cmd.Flags().StringVar(&state, "state", "", "only contracts in this state: accepted, running, settled or voided")
	cmd.Flags().StringVar(&server, "server", "", "only contracts with this server")
	cmd.Flags().StringVar(&since, "since", "", "only contracts accepted since: a duration ago (24h) or a time (2026-12-01, RFC 3339)")
	return cmd
}

// dueSoFar is what running contract k's last reading makes due so far,
// at its currency's scale.
func dueSoFar(k protocol.ContractView, sc *scales) (string, bool) {
	scale, ok := sc.of(k.Terms.Currency)
	if !ok {
		return "", false
	}
	due, ok := k.DueSoFar(scale)
	if !ok {
		return "", false
	}
	return sc.amount(due, k.Terms.Currency), true
}

// newBidControlCmd is suspend or kill.
func newBidControlCmd(f *bidFlags, verb string) *cobra.Command {
	short := map[string]string{
		protocol.VerbSuspend: "Suspend a contract: stop its job, settle it, and let `resume` continue it under a new offer",
		protocol.VerbKill:    "Kill a contract: stop its job for good and settle it",
	}[verb]
	return &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			do := c.Suspend
			if verb == protocol.VerbKill {
				do = c.Kill
			}
			k, err := do(ctx, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				return f.printJSON(out, k)
			}
			sc, cur := newScales(ctx, c), k.Terms.Currency
			switch {
			case k.State == contract.StateSettled:
				fmt.Fprintf(out, "%s settled (%s): charged %s, refunded %s %s\n", k.ID, safe(string(k.Reason)), sc.amount(k.Charge, cur), sc.amount(k.Refund, cur), cur)
			case k.State == contract.StateVoided:
				fmt.Fprintf(out, "%s voided before it started (%s): %s %s refunded\n", k.ID, safe(string(k.Reason)), sc.amount(k.Refund, cur), cur)
			default:
				fmt.Fprintf(out, "%s: %s sent to %s; the contract settles when the job stops (%s watch %s)\n", k.ID, verb, safe(k.Server), f.command(cmd), k.ID)
			}
			return nil
		}),
	}
}

func newBidBalanceCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "balance",
		Short: "Show your wallet: available, and held in escrow for running contracts, and the currency's scale",
		Args:  cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			b, err := c.Balance(ctx, "")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				return f.printJSON(out, b)
			}
			tw := table(out)
			fmt.Fprintln(tw, "ACCOUNT\tCURRENCY\tSCALE\tAVAILABLE\tHELD\tTOTAL")
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", b.Account, b.Currency, b.Scale,
				currency.Format(b.Available, b.Scale), currency.Format(b.Held, b.Scale), currency.Format(b.Available.Add(b.Held), b.Scale))
			if err := tw.Flush(); err != nil {
				return err
			}
			if w := b.Waiting; w != nil {
				fmt.Fprintf(out, "%d waiting offer(s) will need %s %s at their match: not held, escrowed from what is available then\n",
					w.Offers, currency.Format(w.Prepayments, b.Scale), b.Currency)
			}
			return nil
		}),
	}
}

func newBidStatementCmd(f *bidFlags) *cobra.Command {
	var (
		after int64
		limit int
	)
	cmd := &cobra.Command{
		Use:   "statement",
		Short: "Show your wallet's statement with the running balance",
		Args:  cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			es, err := c.Statement(ctx, "", after, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				if es == nil {
					es = []currency.Entry{}
				}
				return f.printJSON(out, es)
			}
			sc, cur := newScales(ctx, c), c.Currency()
			tw := table(out)
			fmt.Fprintln(tw, "SEQ\tAT\tAMOUNT\tBALANCE\tCOUNTERPARTY\tMEMO")
			for _, e := range es {
				row(tw, e.Seq, when(e.At), signed(e.Amount, sc.amount(e.Amount, cur)),
					sc.amount(e.Balance, cur), e.Counterparty, oneLine(e.Memo))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(es) == limit {
				fmt.Fprintf(out, "more: %s statement --after %d\n", f.command(cmd), es[len(es)-1].Seq)
			}
			return nil
		}),
	}
	cmd.Flags().Int64Var(&after, "after", 0, "start after this sequence number")
	cmd.Flags().IntVar(&limit, "limit", 100, "how many entries to show")
	return cmd
}

// signed is text, the amount d written, with a + if d is positive.
func signed(d decimal.Decimal, text string) string {
	if d.Sign() > 0 {
		return "+" + text
	}
	return text
}

func oneLine(s string) string { return safe(strings.Join(strings.Fields(s), " ")) }

// modelText is the GPU model a contract sold, as its server said at the
// start; before that the model its class asks for, else "any".
func modelText(k protocol.ContractView) string {
	return safe(contract.ModelSold(k.Model, k.Terms.Class))
}
