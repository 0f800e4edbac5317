package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
)

// view draws the demo's live screen: redrawn in place on a terminal, a
// progress line every few seconds otherwise (a log, a pipe, CI).
type view struct {
	out      io.Writer
	m        *market.Market
	store    exchange.Store
	ledger   currency.Ledger
	total    time.Duration
	terminal bool
	// quiet draws nothing while the market trades: the start's lines,
	// then the summary (bourse demo --quiet).
	quiet bool
}

func newView(out io.Writer, m *market.Market, store exchange.Store, total time.Duration) *view {
	return &view{out: out, m: m, store: store, ledger: store.Ledger(), total: total, terminal: isTerminal(out)}
}

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\033[H\033[2J"

func (v *view) run(ctx context.Context, d time.Duration) {
	every := 5 * time.Second
	if v.terminal {
		every = 500 * time.Millisecond
	}
	end := time.After(d)
	tick := time.NewTicker(every)
	defer tick.Stop()
	fmt.Fprintf(v.out, "Bourse demo: trading for %s. NATS at %s (try: nats sub 'bourse.v1.deliver.>' -s %s)\n", d, v.m.URL(), v.m.URL())
	for _, w := range v.m.Wallets {
		fmt.Fprintf(v.out, "Trade yourself as client %s (%s %s, which no bot touches): bourse bid --nats %s --id %s balance\n",
			w.ID, currency.Format(w.Budget, market.Currency.Scale), market.Currency.Code, v.m.URL(), w.ID)
		fmt.Fprintf(v.out, "  or, once per shell: export BOURSE_NATS_URL=%s BOURSE_ID=%s; then: bourse bid balance\n", v.m.URL(), w.ID)
		fmt.Fprintf(v.out, "  more money, up to %s at a time: bourse demo grant --nats %s --id %s %s\n",
			currency.Format(demoFaucet, market.Currency.Scale), v.m.URL(), w.ID, currency.Format(keyboardBudget, market.Currency.Scale))
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-end:
			v.draw(ctx)
			return
		case <-tick.C:
			v.draw(ctx)
		}
	}
}

func (v *view) draw(ctx context.Context) {
	if v.quiet {
		return
	}
	s := v.m.Tally.Snapshot()
	if !v.terminal {
		fmt.Fprintf(v.out, "%5.1fs  %d offers, %d running, %d settled, %d voided, %d countered\n",
			s.Elapsed.Seconds(), s.Offers, s.Running, s.SettledTotal(), s.Voided, s.Countered)
		return
	}
	var b strings.Builder
	b.WriteString(clearScreen)
	fmt.Fprintf(&b, "Bourse demo  %s / %s   %s\n\n", s.Elapsed.Truncate(100*time.Millisecond), v.total, progress(s.Elapsed, v.total, 30))
	fmt.Fprintf(&b, "Contracts: %d running · %d settled · %d voided      Offers: %d · countered %d · rejected %d · counters taken %d\n\n",
		s.Running, s.SettledTotal(), s.Voided, s.Offers, s.Countered, s.Rejected, s.Taken)
	v.servers(&b, s, false)
	b.WriteString("\n")
	v.clients(ctx, &b, s)
	b.WriteString("\nLatest:\n")
	for _, l := range s.Log {
		b.WriteString("  " + l + "\n")
	}
	fmt.Fprint(v.out, b.String())
}

// Money is written at the market's currency's scale, prices per GPU-hour
// at its places, as people compare GPU prices (amounts.go).

// perHour writes a price per GPU-second per GPU-hour, "-" for none yet.
func perHour(d decimal.Decimal, scale int32) string {
	if d.IsZero() {
		return "-"
	}
	return currency.FormatPrice(contract.PerHour(d), scale)
}

func (v *view) servers(w io.Writer, s market.Snapshot, final bool) {
	scale := market.Currency.Scale
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if final {
		fmt.Fprintln(tw, "SERVER\tPOLICY\tGPUS\tCONTRACTS\tGPU-SECONDS\tUTILISATION\tREVENUE")
	} else {
		fmt.Fprintln(tw, "SERVER\tPOLICY\tGPUS\tIN USE\t\tCONTRACTS\tLAST PRICE/GPU-H\tREVENUE")
	}
	for _, spec := range v.m.Servers {
		st := s.Servers[spec.ID]
		class := fmt.Sprintf("%d× %s", spec.Count, spec.Model)
		if final {
			util := st.Utilisation(s.Elapsed, spec.Count).Mul(decimal.NewFromInt(100))
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s%%\t%s\n", spec.ID, spec.Policy, class, st.Contracts, st.GPUSeconds.StringFixed(1), util.StringFixed(0), currency.Format(st.Revenue, scale))
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", spec.ID, spec.Policy, class, st.BusyGPUs, bar(st.BusyGPUs, spec.Count), st.Contracts, perHour(st.LastPrice, scale), currency.Format(st.Revenue, scale))
	}
	_ = tw.Flush()
}

func (v *view) clients(ctx context.Context, w io.Writer, s market.Snapshot) {
	scale := market.Currency.Scale
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tSTRATEGY\tVALUE/GPU-H\tAVAILABLE\tHELD\tSPENT\tREFUNDED\tCONTRACTS\tDONE")
	for _, spec := range v.m.Clients {
		ct := s.Clients[spec.ID]
		bal, _ := v.ledger.Balance(ctx, currency.WalletID(market.Currency.Code, spec.ID))
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n", spec.ID, scenario.StrategyName(spec.Strategy), perHour(spec.Value, scale),
			currency.Format(bal.Available, scale), currency.Format(bal.Held, scale), currency.Format(ct.Spent, scale), currency.Format(ct.Refunded, scale), ct.Contracts, ct.Done)
	}
	// The keyboard's wallets: their trades are the person's, not the
	// tally's: their contracts are read from the store.
	for _, w := range v.m.Wallets {
		bal, _ := v.ledger.Balance(ctx, currency.WalletID(market.Currency.Code, w.ID))
		ct, _ := market.Traded(ctx, v.store, w.ID) // none, as before, where the store does not answer
		fmt.Fprintf(tw, "%s\t%s\t-\t%s\t%s\t%s\t%s\t%d\t%d\n", w.ID, "bourse bid", currency.Format(bal.Available, scale), currency.Format(bal.Held, scale),
			currency.Format(ct.Spent, scale), currency.Format(ct.Refunded, scale), ct.Contracts, ct.Done)
	}
	_ = tw.Flush()
}

// summary prints the settlement summary after the market stopped.
func (v *view) summary(ctx context.Context) {
	s := v.m.Tally.Snapshot()
	fmt.Fprintf(v.out, "\nSettlement summary after %s\n\n", s.Elapsed.Truncate(100*time.Millisecond))
	fmt.Fprintf(v.out, "%d offers: %d contracts settled, %d voided, %d answered with counter-offers (%d taken), %d rejected\n",
		s.Offers, s.SettledTotal(), s.Voided, s.Countered, s.Taken, s.Rejected)
	reasons := make([]string, 0, len(s.Settled))
	for r, n := range s.Settled {
		reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
	}
	slices.Sort(reasons)
	if len(reasons) > 0 {
		fmt.Fprintf(v.out, "settled by reason: %s\n", strings.Join(reasons, ", "))
	}
	if len(s.Errors) > 0 {
		var es []string
		for c, n := range s.Errors {
			es = append(es, fmt.Sprintf("%s %d", c, n))
		}
		slices.Sort(es)
		fmt.Fprintf(v.out, "errors the bidders met: %s\n", strings.Join(es, ", "))
	}
	fmt.Fprintln(v.out)
	v.servers(v.out, s, true)
	fmt.Fprintln(v.out)
	v.clients(ctx, v.out, s)
	fmt.Fprintln(v.out)
	v.policy(ctx, v.out)
}

// policy says what the clients' caps and allowances did, and what the
// treasury recorded.
func (v *view) policy(ctx context.Context, w io.Writer) {
	scale := market.Currency.Scale
	t := v.m.Treasury()
	uses, err := t.SpendUses(ctx)
	if err != nil {
		fmt.Fprintf(w, "spend caps: %v\n", err)
	}
	refused := v.m.Tally.Snapshot().Errors[bourse.ECapExceeded]
	for _, spec := range v.m.Clients {
		if spec.CapGPUs > 0 {
			fmt.Fprintf(w, "cap: %s may hold %d GPUs at once (wallet/GPU-CAP/%s); offers refused cap_exceeded in the market (any cap): %d\n",
				spec.ID, spec.CapGPUs, spec.ID, refused)
		}
		for _, u := range uses {
			if u.Owner == spec.ID {
				fmt.Fprintf(w, "spend cap: %s may commit %s a %s; %s used (charged, or held by running contracts), warned at %s%%\n",
					spec.ID, currency.Format(u.Limit, scale), u.Period, currency.Format(u.Used, scale), u.Warn.Mul(decimal.NewFromInt(100)).Round(0))
			}
		}
		if a := spec.Allowance; a != nil {
			r := allowance.Rule{A: a.A, B: a.B}
			steady, _ := r.Steady()
			paid, n := decimal.Zero, 0
			es, _ := v.ledger.Statement(ctx, currency.WalletID(market.Currency.Code, spec.ID), 0, 10000)
			for _, e := range es {
				if allowance.IsPayment(e.Key) {
					paid, n = paid.Add(e.Amount), n+1
				}
			}
			fmt.Fprintf(w, "allowance: %s: dx/dt = a − b·x with a = %s/h, b = %s/h (tends to a/b = %s); net %s in %d payments\n",
				spec.ID, a.A, a.B, currency.Format(steady, scale), currency.Format(paid, scale), n)
		}
	}
	if acts, err := t.Actions(ctx, "", currency.MaxPage); err == nil {
		fmt.Fprintf(w, "treasury: %d administrative actions in the audit trail (grants, caps, allowances), each under its key and actor\n", len(acts))
	}
}

func progress(done, total time.Duration, width int) string {
	n := 0
	if total > 0 {
		n = min(width, int(float64(width)*done.Seconds()/total.Seconds()))
	}
	return "[" + strings.Repeat("█", n) + strings.Repeat("·", width-n) + "]"
}

func bar(used, total int) string {
	return strings.Repeat("■", used) + strings.Repeat("□", max(0, total-used))
}
