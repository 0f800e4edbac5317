package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// printQueued tells an offer queued in the book, and how to follow it.
func printQueued(w io.Writer, q contract.Waiting, bid string) {
	fmt.Fprintf(w, "no server accepted at once: offer %s waits in the book until %s, %d ahead of it; nothing is held meanwhile\n",
		q.ID, when(q.Until), q.Ahead)
	fmt.Fprintf(w, "follow it: %s watch %s   (cancel it: %s cancel %s)\n", bid, q.ID, bid, q.ID)
}

func newBidWaitingCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "waiting",
		Short: "List your offers waiting in the book, the highest sure price first, and where each stands",
		Args:  cobra.NoArgs,
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, _ []string) error {
			ws, err := c.Waiting(ctx, "")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				if ws == nil {
					ws = []contract.Waiting{}
				}
				return f.printJSON(out, ws)
			}
			if len(ws) == 0 {
				fmt.Fprintln(out, "no offer waits: offer with --wait to have one wait for GPUs")
				return nil
			}
			sc := newScales(ctx, c)
			tw := table(out)
			fmt.Fprintln(tw, "ID\tGPUS\tCLASS\tSURE PRICE\tPREPAYMENT\tAHEAD\tQUEUED\tUNTIL")
			for _, w := range ws {
				cur := w.Terms.Currency
				row(tw, w.ID, w.Terms.GPUs, classText(w.Terms.Class), sc.perSecond(w.Price, cur),
					sc.amount(w.Terms.Prepayment, cur)+" "+cur, w.Ahead, when(w.QueuedAt), when(w.Until))
			}
			return tw.Flush()
		}),
	}
}

func newBidCancelCmd(f *bidFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Take a waiting offer out of the book",
		Args:  cobra.ExactArgs(1),
		RunE: f.with(func(ctx context.Context, cmd *cobra.Command, c *bidder.Client, args []string) error {
			w, err := c.Cancel(ctx, args[0])
			if err != nil {
				return err
			}
			if f.json {
				return f.printJSON(cmd.OutOrStdout(), w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s cancelled after waiting %s; nothing was held for it\n", w.ID, time.Since(w.QueuedAt).Round(time.Second))
			return nil
		}),
	}
}

// awaitMatch follows waiting offer id until a server accepts it (nil) or
// it leaves the book (an error of code rejected), printing what happens
// to it; not_found if it is not one of the client's waiting offers.
func awaitMatch(ctx context.Context, out io.Writer, c *bidder.Client, f *bidFlags, bid, id string) error {
	asJSON, sc := f.json, newScales(ctx, c)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Events(wctx, 64) // before the look, so nothing falls in between
	if err != nil {
		return err
	}
	find := func() (contract.Waiting, bool, error) {
		ws, err := c.Waiting(ctx, "")
		for _, w := range ws {
			if w.ID == id {
				return w, true, err
			}
		}
		return contract.Waiting{}, false, err
	}
	w, ok, err := find()
	if err != nil {
		return err
	}
	if !ok {
		_, err := c.Contract(ctx, id) // matched meanwhile, or not_found
		return err
	}
	if !asJSON {
		fmt.Fprintf(out, "%s  waiting   %d ahead, until %s\n", time.Now().Format("15:04:05"), w.Ahead, when(w.Until))
	}
	poll := time.NewTicker(bidder.WatchPoll)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-events:
			if !ok {
				return ctx.Err()
			}
			switch {
			case ev.Type == protocol.EventAccepted && ev.Contract != nil && ev.Contract.ID == id:
				if !asJSON {
					k := ev.Contract
					fmt.Fprintf(out, "%s  matched   %s accepted it after %s in the book\n", ev.At.Local().Format("15:04:05"), safe(k.Server),
						k.AcceptedAt.Sub(k.QueuedAt).Round(time.Second))
				}
				return nil
			case ev.Waiting == nil || ev.Waiting.ID != id:
				continue
			}
			if asJSON {
				if err := f.printJSONLine(out, ev); err != nil {
					return err
				}
			}
			switch ev.Type {
			case protocol.EventCountered:
				f.remember(ev.Counters, "")
				if !asJSON && len(ev.Counters) > 0 {
					printCountered(out, ev, bid, sc)
				}
			case protocol.EventLeftBook:
				return &bourse.Error{Code: bourse.ERejected, Op: "bid.watch", Message: fmt.Sprintf("%s left the book (%s): %s", id, ev.Waiting.Left, ev.Message)}
			}
		case <-poll.C:
			if _, ok, err := find(); err == nil && !ok {
				if _, err := c.Contract(ctx, id); err == nil {
					return nil // matched; its event was lost
				}
				return &bourse.Error{Code: bourse.ERejected, Op: "bid.watch", Message: id + " left the book without a contract"}
			}
		}
	}
}

// waitingOffer is the client's offer id if it waits in the book.
func waitingOffer(ctx context.Context, c *bidder.Client, id string) (contract.Waiting, bool) {
	ws, err := c.Waiting(ctx, "")
	if err != nil {
		return contract.Waiting{}, false
	}
	for _, w := range ws {
		if w.ID == id {
			return w, true
		}
	}
	return contract.Waiting{}, false
}

// printShowWaiting writes waiting offer w as show writes a contract.
func printShowWaiting(out io.Writer, w contract.Waiting, sc *scales, bid string) error {
	t, cur := w.Terms, w.Terms.Currency
	tw := table(out)
	line := func(name, format string, args ...any) {
		fmt.Fprintf(tw, "%s\t%s\n", name, fmt.Sprintf(format, args...))
	}
	line("Offer", "%s (its contract's id, once a server accepts it)", w.ID)
	line("Client", "%s", safe(w.Client))
	line("State", "waiting in the book, %d ahead of it; nothing is held for it", w.Ahead)
	line("GPUs", "%d× %s", t.GPUs, classText(t.Class))
	line("Time limit", "%s", t.TimeLimit)
	line("Price", "%s", sc.price(t))
	line("Sure price", "%s, what orders the book", sc.perSecond(w.Price, cur))
	line("Prepayment", "%s %s, escrowed at the match", sc.amount(t.Prepayment, cur), cur)
	if t.Server != "" {
		line("Server", "%s only", safe(t.Server))
	}
	if w.Resumes != "" {
		line("Resumes", "%s", w.Resumes)
	}
	line("Queued", "%s", when(w.QueuedAt))
	line("Until", "%s (then it leaves the book unmatched)", when(w.Until))
	line("Follow it", "%s watch %s   (cancel it: %s cancel %s)", bid, w.ID, bid, w.ID)
	return tw.Flush()
}

// printCountered tells the counter-offers a waiting offer got, sorted,
// with the ids and numbers --take takes them by.
func printCountered(out io.Writer, ev protocol.Event, bid string, sc *scales) {
	first := ev.Counters[0]
	fmt.Fprintf(out, "%s  countered %d counter-offer(s), cheapest %s by %s: take it with %s offer --take 1 (or --take %s); it waits on\n", ev.At.Local().Format("15:04:05"),
		len(ev.Counters), sc.price(first.Terms), safe(first.Server), bid, safe(first.ID))
	printCounterTable(out, protocol.OfferReply{Counters: ev.Counters}, sc)
}
