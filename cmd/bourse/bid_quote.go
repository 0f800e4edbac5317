package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// newBidQuoteCmd asks what an offer would get, binding no one.
func newBidQuoteCmd(f *bidFlags) *cobra.Command {
	o := &offerFlags{}
	cmd := &cobra.Command{
		Use:   "quote",
		Short: "Ask what an offer would get, without making it: which servers would accept, and their counter-offers",
		Long: `quote sends the terms an offer would have (the same flags, or -f) as a quote:
the exchange answers from what the servers publish they would take now
(their asks, as bid servers shows them), asking none of them, and nothing
is escrowed, no GPU is held and no contract comes of it. It prints the
servers whose asks the terms meet, an offer's first candidates, and
counter-offers built from the asks of the others with room, numbered by
price per GPU-second at full use, cheapest first, with their ids (--json:
the same list, in the same order). A counter-offer is honoured while valid:
--take N or --take ID takes one of those shown, as shown (quote --take or
offer --take, without the offer's flags). Quotes count against your
request rate as offers do.

  bourse bid --nats URL --id you quote --gpus 1 --model H100 --price 0.20
  bourse bid --nats URL --id you offer --take 1`,
		Args: cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			o.scales = newScales(ctx, c)
			if o.take != "" && o.takesShown(cmd.Flags()) {
				return o.takeShown(ctx, cmd, f, c, "")
			}
			t, err := o.terms(cmd.Flags(), contract.Terms{Currency: f.currency}, false)
			if err != nil {
				return err
			}
			if err := o.pin(cmd.Flags(), &t); err != nil {
				return err
			}
			q, err := c.Quote(ctx, t)
			if err != nil {
				return err
			}
			return o.quoted(ctx, cmd, f, c, q)
		}),
	}
	o.register(cmd.Flags())
	o.checkBefore(cmd, false)
	return cmd
}

// quoted prints a quote's answer and remembers its counter-offers for a
// later --take; with --take SERVER (the quote went to SERVER alone) it
// takes SERVER's cheapest.
func (o *offerFlags) quoted(ctx context.Context, cmd *cobra.Command, f *bidFlags, c *bidder.Client, q protocol.QuoteReply) error {
	out := cmd.OutOrStdout()
	reply := protocol.OfferReply{Counters: q.Counters, Rejections: q.Rejections}
	f.remember(reply.Counters, "")
	if o.take == "" {
		if f.json {
			return f.printJSON(out, q)
		}
		if len(q.Accepts) > 0 {
			fmt.Fprintf(out, "Would accept now: %s (nothing is held: offer to get it)\n", strings.Join(safeAll(q.Accepts), ", "))
		} else if len(q.Unpriced) == 0 {
			fmt.Fprintln(out, "No server would accept these terms now.")
		}
		if len(q.Unpriced) > 0 {
			fmt.Fprintf(out, "An offer would also go to %s, whose asks name no price: only an offer learns what they say\n", strings.Join(safeAll(q.Unpriced), ", "))
		}
		if len(q.Counters) > 0 {
			fmt.Fprintf(out, "%d counter-offer(s), cheapest at full use first (take one with %s offer --take N or --take ID):\n", len(q.Counters), f.command(cmd))
		}
		printCounterTable(out, reply, o.scales)
		return nil
	}
	if len(q.Accepts) > 0 {
		return &bourse.Error{Code: bourse.ERejected, Op: "bid.quote", Message: fmt.Sprintf("%s would accept these terms as they are, and a quote holds nothing: make the offer (offer --server %s and the same flags)", safe(o.take), safe(o.take))}
	}
	if len(reply.Counters) == 0 {
		return &bourse.Error{Code: bourse.ERejected, Op: "bid.quote", Message: "--take: the quote brought no counter-offer"}
	}
	n, err := pick(reply.Counters, o.take)
	if err != nil {
		return err
	}
	if o.requestID == "" {
		o.requestID = newRequestID()
	}
	got, err := c.Take(ctx, o.requestID, reply.Counters[n-1])
	if err != nil {
		return retryHint(err, o.requestID)
	}
	if got.Contract == nil {
		return &bourse.Error{Code: bourse.ERejected, Op: "bid.quote", Message: fmt.Sprintf("counter-offer %s (%s's) was not honoured: quote again", safe(reply.Counters[n-1].ID), safe(reply.Counters[n-1].Server))}
	}
	if f.json {
		return f.printJSON(out, got)
	}
	printContract(out, *got.Contract, o.scales, f.command(cmd))
	return nil
}
