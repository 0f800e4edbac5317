package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// strategies are what --auto can name.
var strategies = map[string]func() strategy.Strategy{
	"fixed":    func() strategy.Strategy { return strategy.Fixed{} },
	"cheapest": func() strategy.Strategy { return strategy.Cheapest{} },
	"adaptive": func() strategy.Strategy { return &strategy.Adaptive{} },
	"deadline": func() strategy.Strategy { return strategy.Deadline{} },
}

// negotiate lets the --auto strategy price t and answer counter-offers
// until a contract or it gives up. The strategy sets the price; the flags
// set everything else.
func (o *offerFlags) negotiate(ctx context.Context, cmd *cobra.Command, f *bidFlags, c *bidder.Client, t contract.Terms) error {
	newStrategy, ok := strategies[o.auto]
	if o.auto == "going" {
		ok, newStrategy = true, o.going(ctx, c)
	}
	if !ok { // checkAuto refused it before anything connected
		return usagef("--auto %q: want fixed, cheapest, adaptive, deadline or going", o.auto)
	}
	value, err := amount("--value", o.value)
	if err != nil {
		return err
	}
	deadline, err := parseDeadline(o.deadline, time.Now())
	if err != nil {
		return err
	}
	job := strategy.Job{
		Name: o.requestID, Currency: t.Currency, GPUs: t.GPUs, Class: t.Class, Runtime: t.TimeLimit,
		Utilization: decimal.NewFromInt(1), Value: value, Deadline: deadline, Preemptible: t.Preemptible, Scale: o.scale,
	}
	if t.Job != nil && t.Job.Profile != nil {
		job.Runtime, job.Utilization = t.Job.Profile.Duration, t.Job.Profile.Utilization
	}
	prepayment, err := o.prepaymentFlag()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	k, err := strategy.Negotiate(ctx, c, strategy.Negotiation{
		Strategy: newStrategy(), Job: job, RequestID: o.requestID, Rounds: o.rounds,
		Adjust: func(b *contract.Terms) {
			b.TimeLimit, b.Job, b.Server, b.Q, b.Class = t.TimeLimit, t.Job, t.Server, t.Q, t.Class
			b.Prepayment = prepayment
			b.Prepayment = b.CappedPrepayment(o.scale)
		},
		Report: func(r strategy.Round) {
			if !f.json {
				printRound(out, r, o.scales)
			}
		},
	})
	switch bourse.ErrorCode(err) {
	case "":
	case bourse.EInternal:
		if errors.Is(err, strategy.ErrGaveUp) {
			// The market said no, round after round: status 3, as an
			// offer that ends without a contract.
			return &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: "--auto " + o.auto + ": no contract", Err: err}
		}
		return err
	case bourse.EUnavailable, bourse.EDeadlineExceeded:
		// Negotiating again, even under the same --request-id, offers the
		// earlier rounds afresh, and one may get a contract of its own.
		return fmt.Errorf("%w; the last offer may have gone through: see bourse bid contracts before offering again", err)
	default:
		return err
	}
	if f.json {
		return f.printJSON(out, protocol.OfferReply{Contract: &k})
	}
	printContract(out, k, o.scales, f.command(cmd))
	return nil
}

// going is the strategy that bids the going rate, from the market data
// the exchange publishes, which it waits for (a few seconds at most) so
// that its first bid knows the market.
func (o *offerFlags) going(ctx context.Context, c *bidder.Client) func() strategy.Strategy {
	prices, err := c.Prices(ctx)
	if err != nil {
		return func() strategy.Strategy { return strategy.Going{} } // bids as without market data
	}
	deadline := time.Now().Add(marketWait)
	for time.Now().Before(deadline) && !prices.Known() {
		time.Sleep(50 * time.Millisecond)
	}
	return func() strategy.Strategy { return strategy.Going{Prices: prices} }
}

// marketWait is how long --auto going waits for the market data before
// its first bid: more than the exchange's default period.
const marketWait = 6 * time.Second

// parseDeadline reads a duration from now ("45m") or an RFC 3339 time;
// empty is no deadline.
func parseDeadline(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, usagef("--deadline %q: want a duration from now (45m) or a time like 2026-11-21T18:00:00Z", s)
	}
	return t, nil
}

// printRound tells one round of an --auto negotiation.
func printRound(w io.Writer, r strategy.Round, sc *scales) {
	fmt.Fprintf(w, "offer %d at %s: ", r.N+1, sc.price(r.Terms))
	switch {
	case r.Reply.Contract != nil && r.Took != nil:
		fmt.Fprintf(w, "took %s's counter-offer at %s\n", safe(r.Took.Server), sc.price(r.Took.Terms))
	case r.Reply.Contract != nil:
		fmt.Fprintf(w, "accepted by %s\n", safe(r.Reply.Contract.Server))
	case r.Err != nil && r.Took != nil:
		fmt.Fprintf(w, "%s's counter-offer was gone (%s)\n", safe(r.Took.Server), safe(r.Err.Error()))
	case r.Err != nil:
		fmt.Fprintf(w, "%s\n", safe(r.Err.Error()))
	case len(r.Reply.Counters) > 0:
		fmt.Fprintf(w, "%d counter-offer(s), none taken (cheapest %s)\n", len(r.Reply.Counters), sc.price(cheapest(r.Reply.Counters).Terms))
	default:
		fmt.Fprintf(w, "rejected\n")
	}
}

// cheapest is the first counter-offer in the one order of them,
// strategy.CompareCounters.
func cheapest(ks []contract.Counter) contract.Counter {
	return slices.MinFunc(ks, strategy.CompareCounters)
}
