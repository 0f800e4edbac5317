package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// --take takes a counter-offer that was shown: by the number it had in
// the list last shown (by offer or quote, as a table or as JSON), or by
// its id. Neither makes a new offer, so the counter-offer taken is the
// one the person read, whatever the servers would answer now. With an
// offer's terms, --take SERVER offers them to that server alone and
// takes its cheapest counter-offer: a contract with SERVER, or none.

// shapingFlags are the flags that make an offer's terms, which --take N
// or --take ID cannot change: the counter-offer's terms are its server's.
var shapingFlags = append([]string{"file", "prepayment", "server", "wait", "auto", "value", "deadline", "rounds", "scale"}, termFlags...)

// takesShown says whether --take names a counter-offer shown before (a
// number, or no offer's terms given) rather than a server to offer them
// to.
func (o *offerFlags) takesShown(fs *pflag.FlagSet) bool {
	if _, err := strconv.Atoi(o.take); err == nil {
		return true
	}
	return shaping(fs) == ""
}

// shaping is the first flag given that shapes an offer, "" if none.
func shaping(fs *pflag.FlagSet) string {
	for _, name := range shapingFlags {
		if fl := fs.Lookup(name); fl != nil && fl.Changed {
			return name
		}
	}
	return ""
}

// takeShown takes the counter-offer --take names among those shown last,
// as shown; resumes, if set, must be the contract the list's offer
// resumed.
func (o *offerFlags) takeShown(ctx context.Context, cmd *cobra.Command, f *bidFlags, c *bidder.Client, resumes string) error {
	list, err := f.shown()
	if err != nil {
		return err
	}
	if resumes != "" && list.Resumes != resumes {
		return usagef("--take %s: the counter-offers shown last did not answer a resume of %s: resume it without --take first", o.take, resumes)
	}
	n, err := pickShown(list, o.take)
	if err != nil {
		return err
	}
	k := list.Counters[n-1]
	if was, ok := list.Taken[k.ID]; ok {
		return usagef("--take %s: counter-offer %d (%s) of %s was taken from here at %s and made contract %s; taking it again would make a second contract with an escrow of its own: offer or quote again for new counter-offers",
			o.take, n, safe(k.ID), safe(k.Server), was.At.Local().Format("15:04:05"), was.Contract)
	}
	if o.requestID == "" {
		// One request per counter-offer: should the list above be lost,
		// the exchange answers a second take with the first's contract.
		o.requestID = "take-" + k.ID
	}
	out := cmd.OutOrStdout()
	if !f.json {
		fmt.Fprintf(out, "taking counter-offer %d (%s) of %s: %d× %s for up to %s at %s, prepayment %s %s\n", n, safe(k.ID), safe(k.Server),
			k.Terms.GPUs, classText(k.Terms.Class), k.Terms.TimeLimit, o.scales.price(k.Terms), o.scales.amount(k.Terms.Prepayment, k.Terms.Currency), k.Terms.Currency)
	}
	got, err := c.TakeResume(ctx, o.requestID, list.Resumes, k)
	if err != nil {
		return retryHint(err, o.requestID)
	}
	if got.Contract == nil {
		if len(got.Counters) > 0 {
			f.remember(got.Counters, list.Resumes)
		}
		if f.json {
			_ = f.printJSON(out, got)
		} else if len(got.Counters) > 0 {
			printCounters(out, got, o.scales)
		}
		why := "it was valid until " + when(k.ValidUntil)
		if time.Now().Before(k.ValidUntil) {
			why = "its server would not take it now"
		}
		return &bourse.Error{Code: bourse.ERejected, Op: "bid.take", Message: fmt.Sprintf("counter-offer %s of %s was not honoured (%s); %d new counter-offer(s)", safe(k.ID), safe(k.Server), why, len(got.Counters))}
	}
	f.took(k.ID, got.Contract.ID)
	if f.json {
		return f.printJSON(out, got)
	}
	printContract(out, *got.Contract, o.scales, f.command(cmd))
	return nil
}

// pickShown finds the counter-offer s names in list: its number, its id
// (or the start of one, if only one starts so), or the cheapest of the
// server of that name. A number wins over an id or a server named like
// one.
func pickShown(list shownList, s string) (int, error) {
	if len(list.Counters) == 0 {
		return 0, usagef("--take %s: no counter-offer has been shown here lately: offer or quote first (bourse bid quote …), then take one by its number or id", s)
	}
	n, err := pick(list.Counters, s)
	if err == nil {
		return n, nil
	}
	return 0, usagef("%s; the list shown at %s", err, list.At.Local().Format("15:04:05"))
}

// pick finds the counter-offer s names in ks: its number, its id (or an
// unambiguous start of one, of at least 4 characters), or the cheapest of
// the server of that name (the first, as they are sorted).
func pick(ks []contract.Counter, s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > len(ks) {
			return 0, fmt.Errorf("--take %d: there are %d counter-offers, numbered from 1", n, len(ks))
		}
		return n, nil
	}
	var prefixed []int
	for i, k := range ks {
		if k.ID == s {
			return i + 1, nil
		}
		if len(s) >= 4 && strings.HasPrefix(k.ID, s) {
			prefixed = append(prefixed, i+1)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0], nil
	}
	if len(prefixed) > 1 {
		return 0, fmt.Errorf("--take %s: %d counter-offers' ids start so: give more of it", s, len(prefixed))
	}
	var servers []string
	for i, k := range ks {
		if k.Server == s {
			return i + 1, nil
		}
		servers = append(servers, safe(k.Server))
	}
	return 0, fmt.Errorf("--take %s: no counter-offer of that number, id or server (there are %d, from %s)", safe(s), len(ks), strings.Join(slices.Compact(slices.Sorted(slices.Values(servers))), ", "))
}

// choose says which of the reply's counter-offers to take, numbered from
// 1: with --take SERVER the cheapest (the offer went to SERVER alone), or
// the one the person at the terminal picks. No choice is an error of code
// rejected, so that the exit status says there is no contract.
func (o *offerFlags) choose(cmd *cobra.Command, f *bidFlags, reply protocol.OfferReply, resumes string) (int, error) {
	out, in := cmd.OutOrStdout(), cmd.InOrStdin()
	f.remember(reply.Counters, resumes)
	switch {
	case o.take != "":
		if !f.json {
			printCounters(out, reply, o.scales)
		}
		return pick(reply.Counters, o.take)
	case !f.json && isTerminal(in):
		printCounters(out, reply, o.scales)
		n, err := ask(in, out, reply.Counters)
		if err == nil && n == 0 {
			err = &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: "no contract: you declined the counter-offers"}
		}
		return n, err
	}
	if f.json {
		if err := f.printJSON(out, reply); err != nil {
			return 0, err
		}
	} else {
		printCounters(out, reply, o.scales)
	}
	err := &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: fmt.Sprintf("no server accepted the offer; %d counter-offer(s)", len(reply.Counters))}
	return 0, fmt.Errorf("%w; take one as shown with: %s offer --take N (its number) or --take ID", err, f.command(cmd))
}

// ask reads which counter-offer to take: a number, an id or a server's
// name, or empty to decline (0).
func ask(in io.Reader, out io.Writer, ks []contract.Counter) (int, error) {
	r := bufio.NewReader(in)
	for {
		fmt.Fprintf(out, "Take which counter-offer? [1-%d, an id or a server, empty to decline]: ", len(ks))
		line, err := r.ReadString('\n')
		line = strings.TrimSpace(line)
		if line == "" {
			fmt.Fprintln(out, "declined; no contract")
			return 0, nil
		}
		k, perr := pick(ks, line)
		if perr == nil {
			return k, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read your answer: %w", err)
		}
		fmt.Fprintf(out, "%q is neither a number from 1 to %d nor the id or server of a counter-offer\n", line, len(ks))
	}
}

func printCounters(w io.Writer, r protocol.OfferReply, sc *scales) {
	fmt.Fprintf(w, "No server accepted; %d counter-offer(s), cheapest at full use first:\n", len(r.Counters))
	printCounterTable(w, r, sc)
}

// printCounterTable numbers the counter-offers, with their ids, and lists
// the rejections. No counter-offers, no table.
func printCounterTable(w io.Writer, r protocol.OfferReply, sc *scales) {
	if len(r.Counters) > 0 {
		tw := table(w)
		fmt.Fprintln(tw, "#\tID\tSERVER\tGPUS\tCLASS\tTIME LIMIT\tPRICE\tPREPAYMENT\tVALID FOR\tNOTE")
		for i, k := range r.Counters {
			left := time.Until(k.ValidUntil).Round(time.Second)
			row(tw, i+1, k.ID, k.Server, k.Terms.GPUs, classText(k.Terms.Class),
				k.Terms.TimeLimit, sc.price(k.Terms), sc.amount(k.Terms.Prepayment, k.Terms.Currency)+" "+k.Terms.Currency, max(0, left), oneLine(k.Note))
		}
		_ = tw.Flush()
	}
	for _, rj := range r.Rejections {
		fmt.Fprintf(w, "%s rejected: %s\n", safe(rj.Server), safe(rj.Reason))
	}
}
