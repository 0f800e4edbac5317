package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
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

// newMarketCmd prints the public market data the exchange publishes.
func newMarketCmd() *cobra.Command {
	var (
		natsURL string
		login   natsLogin
		tlsf    natsTLS
		cur     string
		asJSON  bool
		depth   bool
		watch   bool
		wait    time.Duration
	)
	cmd := &cobra.Command{
		Use:   "market",
		Short: "Show the market: what was paid for GPU time used, GPUs free, offers waiting",
		Long: `market prints the market data the exchange publishes every few seconds on
bourse.v1.market.<currency>, which any NATS user of the market may read: per
currency and GPU model, the contracts settled in the last hour (or the window
the exchange says) that paid for use, the GPU-seconds they used and what they
were charged, their prices per GPU-second used (low, median and high, the
median weighted by GPU-seconds used, and VWAP: all charged over all used), the
GPUs of the servers heard from and how many are free, and the offers waiting
in the book with the best sure price among them. It names no client.

--depth prints both sides of each model's book instead, as an exchange's
depth view: a table per model of price levels, dearest at the top, with the
GPUs the servers' asks offer at each level (those free, of the servers heard
from lately whose asks name a price) and the GPUs the waiting offers want;
above it the best ask and bid, the spread and mid, the last trade and the
window's volume. Both sides are placed at the price per GPU-second of one GPU
used in full, P(1) + Q(1), of the ask's or the offer's curves (asks rounded
up, offers down); at most 20 levels a side, those nearest the other side.
--json prints all of it, every model's "book" and "last".

Without --watch it waits for the next publication (every currency's, or
--currency's) and prints it; --watch follows them until interrupted: on a
terminal it redraws the screen in place with each currency's latest, as
watch(1) does, elsewhere (a pipe, a log) it prints each below the last;
--json prints JSON (with --watch, a line per message).

  bourse market --nats URL
  bourse market --nats URL --currency CRED --watch
  bourse market --nats URL --currency CRED --depth`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			tlsOpts, err := tlsf.options()
			if err != nil {
				return err
			}
			loginOpts, err := login.options()
			if err != nil {
				return err
			}
			nc, err := nats.Connect(natsURL, append(append([]nats.Option{nats.Name("bourse-market")}, loginOpts...), tlsOpts...)...)
			if err != nil {
				return &bourse.Error{Code: bourse.EUnavailable, Op: "market", Message: "connect to NATS at " + natsURL + " (bourse demo prints its URL; set --nats or BOURSE_NATS_URL)", Err: err}
			}
			defer nc.Close()
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			// Every currency's, even for one: a round without it says
			// at once that the market has no such currency.
			ch, err := bidder.SubscribeMarket(ctx, nc, "")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			ms, err := nextMarket(ctx, ch, cur, wait)
			if err != nil {
				return err
			}
			redraw := watch && !asJSON && isTerminal(out)
			if redraw {
				fmt.Fprint(out, clearScreen)
			}
			if err := printMarkets(out, ms, asJSON && !watch, asJSON, depth); err != nil || !watch {
				return err
			}
			return watchMarket(ctx, out, ch, cur, asJSON, depth, redraw, ms)
		},
	}
	cmd.PreRunE = func(*cobra.Command, []string) error {
		if cur == "" {
			return nil
		}
		if err := protocol.CheckID(cur); err != nil {
			return usagef("--currency: %v", err)
		}
		return nil
	}
	f := cmd.Flags()
	f.StringVar(&natsURL, "nats", nats.DefaultURL, "NATS server URL(s), comma-separated")
	bindEnv(f, "nats", "BOURSE_NATS_URL", "NATS_URL")
	login.addFlags(f)
	tlsf.addFlags(f)
	f.StringVar(&cur, "currency", "", "one currency's market (default every currency's)")
	f.BoolVar(&asJSON, "json", false, "print JSON for scripts instead of tables")
	f.BoolVar(&depth, "depth", false, "print both sides of each model's book by price level: the GPUs servers ask to sell and waiting offers want")
	f.BoolVar(&watch, "watch", false, "print each publication as it comes, until interrupted")
	f.DurationVar(&wait, "wait", 15*time.Second, "how long to wait for a publication")
	markContext(cmd, f)
	return cmd
}

// printMarkets prints one publication: JSON (an array, or with --watch
// a line per currency), the depth view or the tables.
func printMarkets(out io.Writer, ms []protocol.Market, array, asJSON, depth bool) error {
	switch {
	case array:
		return printMarketJSON(out, ms, false)
	case asJSON:
		for _, m := range ms {
			if err := printMarketJSON(out, m, true); err != nil {
				return err
			}
		}
		return nil
	case depth:
		return printDepth(out, ms)
	}
	return printMarket(out, ms)
}

// printMarketJSON writes market data as JSON, its money (charged) at
// its currency's scale, which each message carries; line writes it on
// one line.
func printMarketJSON(out io.Writer, v any, line bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if b, err = protocol.AtScale(b, "", nil); err != nil {
		return err
	}
	if line {
		var c bytes.Buffer
		if err := json.Compact(&c, b); err != nil {
			return err
		}
		b = append(c.Bytes(), '\n')
	}
	_, err = out.Write(b)
	return err
}

// nextMarket gathers one publication: currency cur's first message if
// one was asked for, else every currency published within the period the
// first message states (its "every"), and fails if none comes in wait.
// The exchange publishes every currency of its ledger in one round: a
// round without cur says the market has no such currency (code
// unknown_currency), without waiting out wait.
func nextMarket(ctx context.Context, ch <-chan protocol.Market, cur string, wait time.Duration) ([]protocol.Market, error) {
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	var got []protocol.Market
	var heard []string // other currencies, while waiting for cur
	var round <-chan time.Time
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				return got, ctx.Err()
			}
			if round == nil {
				// One instance publishes every currency at once: the
				// rest of the round follows within moments.
				round = time.After(min(time.Duration(m.Every), time.Second))
			}
			if cur != "" && m.Currency != cur {
				heard = append(heard, m.Currency)
				continue
			}
			if slices.ContainsFunc(got, func(g protocol.Market) bool { return g.Currency == m.Currency }) {
				return got, nil // a second round has begun
			}
			got = append(got, m)
			if cur != "" {
				return got, nil
			}
		case <-round:
			if cur != "" {
				slices.Sort(heard)
				return nil, &bourse.Error{Code: bourse.EUnknownCurrency, Op: "market", Field: "currency",
					Message: fmt.Sprintf("no currency %q on this market: its exchange publishes %s", cur, safe(strings.Join(slices.Compact(heard), ", ")))}
			}
			slices.SortFunc(got, func(a, b protocol.Market) int { return strings.Compare(a.Currency, b.Currency) })
			return got, nil
		case <-timeout.C:
			return nil, &bourse.Error{Code: bourse.EUnavailable, Op: "market",
				Message: fmt.Sprintf("no market data came in %v: is an exchange running on this NATS (bourse exchange, or bourse demo)?", wait)}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// watchMarket prints each publication (of currency cur, if given) until
// ctx ends. With redraw it clears the screen and draws every currency's
// latest publication (first: those printed already) at the top instead,
// so that a terminal shows the market now, not a scroll of it.
func watchMarket(ctx context.Context, out io.Writer, ch <-chan protocol.Market, cur string, asJSON, depth, redraw bool, first []protocol.Market) error {
	latest := map[string]protocol.Market{}
	for _, m := range first {
		latest[m.Currency] = m
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			if cur != "" && m.Currency != cur {
				continue
			}
			latest[m.Currency] = m
			ms := []protocol.Market{m}
			if redraw {
				ms = slices.SortedFunc(maps.Values(latest), func(a, b protocol.Market) int { return strings.Compare(a.Currency, b.Currency) })
				fmt.Fprint(out, clearScreen)
			}
			var err error
			switch {
			case asJSON:
				err = printMarketJSON(out, m, true)
			case depth:
				err = printDepth(out, ms)
			default:
				err = printMarket(out, ms)
			}
			if err != nil {
				return err
			}
		}
	}
}

// printMarket prints market data as a table per currency. Prices are per
// GPU-hour used (the wire's per GPU-second, times 3600), at the
// currency's decimal places (more only where a price would show fewer
// than two significant digits); CHARGED is money.
func printMarket(out io.Writer, ms []protocol.Market) error {
	for i, m := range ms {
		if i > 0 {
			fmt.Fprintln(out)
		}
		cur := safe(m.Currency)
		fmt.Fprintf(out, "%s at %s: contracts settled in the last %s that paid for use, and their prices per GPU-hour used; GPUs of the servers heard from; offers waiting in the book\n",
			cur, when(m.At), time.Duration(m.Window).Round(time.Second))
		places := pricePlaces(m)
		price := func(d decimal.Decimal) string { return contract.PerHour(d).StringFixed(places) }
		tw := table(out)
		fmt.Fprintf(tw, "MODEL\tCONTRACTS\tGPU-S USED\tCHARGED %s\tLOW %s/GPU-H\tMEDIAN\tHIGH\tVWAP\tGPUS\tFREE\tWAITING OFFERS\tWAITING GPUS\tBEST WAITING PRICE\n", cur, cur)
		for _, l := range m.Models {
			low, median, high, vwap := "-", "-", "-", "-"
			if p := l.Prices; p != nil {
				low, median, high, vwap = price(p.Low), price(p.Median), price(p.High), price(p.VWAP)
			}
			best := "-"
			if l.Waiting.Offers > 0 {
				best = price(l.Waiting.Best)
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", safe(l.Model), l.Settled, gpuSeconds(l.Used), currency.Format(l.Charged, m.Scale),
				low, median, high, vwap, l.GPUs, l.Free, l.Waiting.Offers, l.Waiting.GPUs, best)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// gpuSeconds writes GPU-seconds whole: a fraction of one is noise here.
func gpuSeconds(d decimal.Decimal) string { return d.Round(0).String() }

// pricePlaces is how many decimal places m's prices per GPU-hour print
// with, all of them alike so that a column lines up
// (currency.PricePlaces, as the console's market page).
func pricePlaces(m protocol.Market) int32 {
	return currency.PricePlaces(m.Scale, protocol.HourPrices(m.Models)...)
}
