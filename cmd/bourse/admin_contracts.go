package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
)

type storeRun = func(func(context.Context, *cobra.Command, exchange.Store, []string) error) func(*cobra.Command, []string) error

// newAdminContractsCmd lists every client's contracts, as squeue and
// sacct list jobs: by client, server, state and time.
func newAdminContractsCmd(withStore storeRun) *cobra.Command {
	var (
		f            breakdown.Filter
		since, until string
		output       string
		asJSON       bool
		limit        int
	)
	var from, to time.Time
	cmd := &cobra.Command{
		Use:   "contracts",
		Short: "List the market's contracts, newest first, by client, server, state and time (squeue, sacct)",
		Long: `contracts lists the contracts accepted in a span of time (--since, 24h ago
by default; --until, now), newest first, every client's: those of one
client (--client), of one server (--server), in one state (--state
accepted, running, settled or voided). -o wide adds the model sold, the
price per GPU-hour, GPU-seconds used, the meter and when each started and
ended; --json prints the records, money at its currency's places. A
running contract's charge is what its last reading makes due, marked ~.

  bourse admin contracts --state running
  bourse admin contracts --client ada --since 2026-12-01 -o wide
  bourse admin cancel CONTRACT --reason "runaway job" --key cancel-CONTRACT`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			now := time.Now()
			var err error
			if from, err = parseSince("--since", since, now); err != nil {
				return err
			}
			to = now.Add(time.Minute) // what was accepted a moment ago, whatever the clocks
			if until != "" {
				if to, err = parseSince("--until", until, now); err != nil {
					return err
				}
			}
			if f.State != "" && !slices.Contains([]contract.State{contract.StateAccepted, contract.StateRunning, contract.StateSettled, contract.StateVoided}, contract.State(f.State)) {
				return usagef("--state %q: want accepted, running, settled or voided", f.State)
			}
			if output != "" && output != "wide" {
				return usagef("-o %q: want wide (or --json)", output)
			}
			if limit < 1 {
				return usagef("--limit %d: want at least 1", limit)
			}
			return nil
		},
		RunE: withStore(func(ctx context.Context, cmd *cobra.Command, s exchange.Store, _ []string) error {
			ks, more, err := breakdown.Newest(ctx, s, from, breakdown.Cursor{At: to}, f, limit)
			if err != nil {
				return err
			}
			scales := adminScales(ctx, s.Ledger())
			out := cmd.OutOrStdout()
			if asJSON {
				if ks == nil {
					ks = []contract.Contract{}
				}
				b, err := json.Marshal(ks)
				if err != nil {
					return err
				}
				if b, err = protocol.AtScale(b, "", scales.of); err != nil {
					return err
				}
				_, err = out.Write(b)
				return err
			}
			if len(ks) == 0 {
				fmt.Fprintf(out, "no contracts accepted from %s to %s that the filters keep\n", when(from), when(to))
				return nil
			}
			tw := table(out)
			header := "ID\tCLIENT\tSERVER\tSTATE\tREASON\tGPUS\tMODEL\tPREPAYMENT\tCHARGE\tACCEPTED"
			if output == "wide" {
				header += "\tPRICE/GPU-H\tGPU-S USED\tMETER\tSTARTED\tENDED"
			}
			fmt.Fprintln(tw, header)
			for _, k := range ks {
				v := protocol.View(k)
				cur := k.Terms.Currency
				charge := scales.money(k.Charge, cur, k.Ended())
				if due, ok := dueSoFar(v, scales); ok {
					charge = "~" + due
				}
				cells := []any{k.ID, k.Client, k.Server, k.State, or(string(k.Reason), "-"), k.Terms.GPUs, modelText(v),
					scales.amount(k.Terms.Prepayment, cur) + " " + cur, charge, when(k.AcceptedAt)}
				if output == "wide" {
					used := "-"
					if r := k.Reading; r != nil {
						used = r.U.StringFixed(1)
					}
					cells = append(cells, scales.hourText(k.Terms), used, or(string(k.Meter), "-"), when(k.StartedAt), when(k.SettledAt))
				}
				row(tw, cells...)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if more {
				fmt.Fprintf(out, "more: the newest %d are shown; --limit for more, or --until %s for those before\n", limit, ks[len(ks)-1].AcceptedAt.UTC().Format(time.RFC3339Nano))
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Client, "client", "", "only this client's contracts")
	fl.StringVar(&f.Server, "server", "", "only this server's contracts")
	fl.StringVar(&f.State, "state", "", "only contracts in this state: accepted, running, settled or voided")
	fl.StringVar(&since, "since", "24h", "accepted since: a duration ago (24h) or a time (2026-12-01, RFC 3339)")
	fl.StringVar(&until, "until", "", "accepted before: a duration ago or a time (default now)")
	fl.StringVarP(&output, "output", "o", "", "wide for more columns")
	fl.BoolVar(&asJSON, "json", false, "print the contracts' records as JSON")
	fl.IntVar(&limit, "limit", 50, "most contracts to list")
	return cmd
}

// newAdminCancelCmd cancels a contract with a reason, as scancel does.
func newAdminCancelCmd(withStore storeRun) *cobra.Command {
	var reason, key string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "cancel CONTRACT --reason TEXT",
		Short: "Cancel a contract, with a reason the audit trail keeps (scancel)",
		Long: `cancel stops a contract for an administrator, through the database alone:
one not started yet is voided at once and its whole prepayment released;
a running one is stopped as its client's kill would stop it, so that the
next sweep of an exchange instance, once --grace has passed, settles it
on its last reading (the client pays for what its job used until then)
and tells its server to stop the job. The audit trail records who
cancelled it and why (--reason, required) before the cancel is made; the
same --key records it once. A contract that has ended is left as it is.`,
		Args: cobra.ExactArgs(1),
		PreRunE: func(_ *cobra.Command, args []string) error {
			if reason == "" {
				return usagef("--reason is required: the audit trail says why %s was cancelled", args[0])
			}
			if grace < 0 {
				return usagef("--grace %s: want 0 or more", grace)
			}
			return nil
		},
		RunE: withStore(func(ctx context.Context, cmd *cobra.Command, s exchange.Store, args []string) error {
			id := args[0]
			if _, err := s.Contract(ctx, id); err != nil {
				return err
			}
			actor, err := adminActor(cmd)
			if err != nil {
				return err
			}
			t, err := openTreasury(ctx, s)
			if err != nil {
				return err
			}
			if key == "" {
				key = "cancel/" + id
			}
			if _, err := t.CancelContract(ctx, actor, id, reason, key); err != nil {
				return err
			}
			k, err := exchange.Cancel(ctx, s, id, time.Now(), grace)
			if err != nil {
				return err
			}
			scales := adminScales(ctx, s.Ledger())
			out, cur := cmd.OutOrStdout(), k.Terms.Currency
			switch {
			case k.State == contract.StateVoided:
				fmt.Fprintf(out, "%s voided (%s): %s %s released to %s\n", k.ID, k.Reason, scales.amount(k.Refund, cur), cur, safe(k.Client))
			case k.State == contract.StateRunning && k.Stop != nil:
				fmt.Fprintf(out, "%s stopping (%s asked at %s): an exchange settles it on its last reading by %s and tells %s to stop the job\n",
					k.ID, k.Stop.Reason, when(k.Stop.At), when(k.Stop.By), safe(k.Server))
			default:
				fmt.Fprintf(out, "%s had ended (%s, %s): nothing to cancel\n", k.ID, k.State, k.Reason)
			}
			return nil
		}),
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why: the audit trail keeps it (required)")
	cmd.Flags().StringVar(&key, "key", "", "idempotency key (default cancel/<contract>)")
	cmd.Flags().DurationVar(&grace, "grace", exchange.DefaultStopGrace, "how long its server's readings still count, as after a client's kill")
	return cmd
}

// parseSince reads a duration ago ("24h") or a time (a date, or RFC 3339).
func parseSince(flag, s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("%s %q: want a duration ago (24h) or a time (2026-12-01, 2026-12-01T10:00:00Z)", flag, s)
}

// adminScales are the scales of the ledger's currencies, for writing
// money as the bid commands do.
func adminScales(ctx context.Context, l currency.Ledger) *scales {
	return &scales{ctx: ctx, known: map[string]int32{}, lookup: ledgerScales(ctx, l)}
}
