package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// sortCounters orders counter-offers by price per GPU-second at full use,
// cheapest first, ties by server: they come in the order the servers
// answered, which changes from one offer to the next, and --take N must
// mean the same counter-offer for the same answers.
func sortCounters(ks []contract.Counter) {
	slices.SortStableFunc(ks, func(a, b contract.Counter) int {
		if c := a.Terms.FullUsePrice().Cmp(b.Terms.FullUsePrice()); c != 0 {
			return c
		}
		return cmp.Compare(a.Server, b.Server)
	})
}

// choose says which of the reply's counter-offers to take, numbered from
// 1: --take's, or the one the person at the terminal picks. No choice is
// an error of code rejected, so that the exit status says there is no
// contract.
func (o *offerFlags) choose(cmd *cobra.Command, f *bidFlags, reply protocol.OfferReply) (int, error) {
	out, in := cmd.OutOrStdout(), cmd.InOrStdin()
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
		if err := printJSON(out, reply); err != nil {
			return 0, err
		}
	} else {
		printCounters(out, reply, o.scales)
	}
	err := &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: fmt.Sprintf("no server accepted the offer; %d counter-offer(s)", len(reply.Counters))}
	return 0, fmt.Errorf("%w; take one with: %s offer … --take N or --take SERVER (the same flags)", err, f.command(cmd))
}

// pick finds the counter-offer s names: its number, or the cheapest of the
// server of that name (the first, as they are sorted). A number wins over
// a server named like one.
func pick(ks []contract.Counter, s string) (int, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n < 1 || n > len(ks) {
			return 0, fmt.Errorf("--take %d: there are %d counter-offers, numbered from 1", n, len(ks))
		}
		return n, nil
	}
	var servers []string
	for i, k := range ks {
		if k.Server == s {
			return i + 1, nil
		}
		servers = append(servers, k.Server)
	}
	return 0, fmt.Errorf("--take %s: no counter-offer from a server of that name (they came from %s)", s, strings.Join(slices.Compact(slices.Sorted(slices.Values(servers))), ", "))
}

// ask reads which counter-offer to take: a number or a server's name, or
// empty to decline (0).
func ask(in io.Reader, out io.Writer, ks []contract.Counter) (int, error) {
	r := bufio.NewReader(in)
	for {
		fmt.Fprintf(out, "Take which counter-offer? [1-%d or a server, empty to decline]: ", len(ks))
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
		fmt.Fprintf(out, "%q is neither a number from 1 to %d nor a server that countered\n", line, len(ks))
	}
}

func printCounters(w io.Writer, r protocol.OfferReply, sc *scales) {
	fmt.Fprintf(w, "No server accepted; %d counter-offer(s), cheapest at full use first:\n", len(r.Counters))
	printCounterTable(w, r, sc)
}

// printCounterTable numbers the counter-offers and lists the rejections.
func printCounterTable(w io.Writer, r protocol.OfferReply, sc *scales) {
	tw := table(w)
	fmt.Fprintln(tw, "#\tSERVER\tGPUS\tCLASS\tTIME LIMIT\tPRICE\tPREPAYMENT\tVALID FOR\tNOTE")
	for i, k := range r.Counters {
		left := time.Until(k.ValidUntil).Round(time.Second)
		row(tw, i+1, k.Server, k.Terms.GPUs, classText(k.Terms.Class),
			k.Terms.TimeLimit, priceText(k.Terms), sc.amount(k.Terms.Prepayment, k.Terms.Currency)+" "+k.Terms.Currency, max(0, left), oneLine(k.Note))
	}
	_ = tw.Flush()
	for _, rj := range r.Rejections {
		fmt.Fprintf(w, "%s rejected: %s\n", safe(rj.Server), safe(rj.Reason))
	}
}
