package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// advise adds what to do to the errors a client can act on; the code stays
// for scripts.
func advise(err error, f *bidFlags) error {
	var e *bourse.Error
	if !errors.As(err, &e) {
		return err
	}
	var hint string
	switch e.Code {
	case bourse.ENoMatch:
		switch e.Field {
		case "": // none registered at all: a fresh exchange
			hint = "wait a few seconds for the servers to say hello, then offer again"
		case "terms.server": // --take SERVER, a name no live server has
			hint = "name one of bourse bid servers, or leave --take out to offer to any"
		default:
			hint = "no server has that class free: try fewer GPUs or another --model"
		}
	case bourse.EInsufficientFunds:
		hint = fmt.Sprintf("the prepayment is the most the offer can cost unless --prepayment says less (every GPU busy for the whole --time-limit, 10m by default): offer a shorter --time-limit or a smaller --prepayment, or ask an administrator for a grant (bourse admin grant --currency %s %s AMOUNT --key KEY; in bourse demo, bourse demo grant AMOUNT grants you more)", f.currency, f.id)
	case bourse.EUnavailable, bourse.EDeadlineExceeded:
		hint = "is the exchange running? (bourse demo or bourse exchange)"
	case bourse.ECapExceeded:
		hint = capHint(e, f)
	case bourse.ECapacityGone:
		hint = "make the offer again: the servers will counter anew"
	case bourse.ENotFound:
		switch e.Field {
		case "contract", "resumes":
			hint = "no such contract of yours: list them with bourse bid contracts"
		case "terms.client":
			hint = "check --id and --currency"
		}
	case bourse.EUnknownCurrency:
		hint = "check --currency"
	case bourse.EInvalidOffer, bourse.EInvalidCurve:
		hint = "docs/pricing.md has the rules of an offer"
	case bourse.EPermission:
		hint = "NATS lets you speak only for your own --id: check --id against --nats-user or --nats-creds"
		if e.Field == "terms.job.command" {
			hint = "name the program as a server's list writes it (the message names each list)"
		}
	case bourse.EJobUnsupported:
		hint = "a program (--command) goes to servers that run programs, an image (--image) to servers that run containers and pull from its registry (bourse bid servers says which), a synthetic job (--duration, the demo's) to servers that run no program"
	}
	if hint == "" {
		return err
	}
	return fmt.Errorf("%w; %s", err, hint)
}

// capHint tells apart the two caps an administrator sets: on GPUs held at
// once (the refusal's field is terms.gpus) and on money committed in a
// period or at a rate (terms.prepayment). The message names whose cap it
// is, which may be the client's project or organisation.
func capHint(e *bourse.Error, f *bidFlags) string {
	if e.Field == "terms.prepayment" {
		return "an administrator caps what may be committed (the message says whose cap, and when it frees): wait for contracts to settle or the period to renew, offer a smaller --prepayment or a shorter --time-limit, or ask for more (bourse admin spend-cap OWNER LIMIT --currency " + f.currency + " --key KEY)"
	}
	return "an administrator caps the GPUs you hold at once: wait for a contract to end, or ask for more (bourse admin cap " + f.id + " N --key KEY)"
}

// rejected is the error of an offer that no server accepted or countered,
// with what to do about it by the servers' reasons: a refusal that carries
// a code (the offer broke a server's rules, e.g. a server that runs
// processes and an offer without --command) is not fixed by offering more.
func rejected(rs []protocol.Rejection) error {
	var why []string
	rules := 0
	for _, r := range rs {
		why = append(why, r.Server+": "+r.Reason)
		if r.Code != "" {
			rules++
		}
	}
	e := &bourse.Error{Code: bourse.ERejected, Op: "bid.offer", Message: "no server accepted or countered (" + strings.Join(why, "; ") + ")"}
	hint := "offer more, or ask for other GPUs, or offer again when GPUs free up"
	switch {
	case rules > 0 && rules == len(rs):
		hint = "the servers refused the offer's terms, not its price: change what their reasons name"
	case rules > 0:
		hint = "some servers refused the offer's terms (their reasons name what), the others its price or their GPUs: offer more, or change the terms"
	}
	return fmt.Errorf("%w; %s", e, hint)
}

// command is `bourse bid` with the connection flags given on this command
// line, for the commands the output suggests next: a person copies them
// into the same shell, where the environment says the rest. A password is
// never printed.
func (f *bidFlags) command(cmd *cobra.Command) string {
	var b strings.Builder
	b.WriteString("bourse bid")
	for _, name := range []string{"nats", "id", "nats-user", "nats-creds", "nats-ca", "nats-cert", "nats-key", "currency"} {
		fl := cmd.Flags().Lookup(name)
		if fl == nil || !fl.Changed {
			continue
		}
		v := fl.Value.String()
		if strings.ContainsAny(v, " \t'\"\\$`!*?&;|<>()") {
			v = strconv.Quote(v)
		}
		b.WriteString(" --" + name + " " + v)
	}
	if fl := cmd.Flags().Lookup("nats-password"); fl != nil && fl.Changed {
		b.WriteString(" --nats-password …")
	}
	return b.String()
}
