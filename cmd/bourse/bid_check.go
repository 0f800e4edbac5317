package main

import (
	"errors"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// checkBefore makes cmd hold its offer flags to the offer's rules before
// anything connects (PreRunE runs after the environment and the context
// have filled the flags in): a value that cannot be right exits 2, naming
// its flag, whether or not NATS is there to hear the offer.
func (o *offerFlags) checkBefore(cmd *cobra.Command, resume bool) {
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return o.check(cmd.Flags(), resume) }
}

// check reads every value the flags give and holds it to the rules that
// need no exchange to judge (contract.ValidateShape's, and the book's
// longest wait): those that do (the currency, the prepayment against the
// wallet) stay the exchange's.
func (o *offerFlags) check(fs *pflag.FlagSet, resume bool) error {
	if fs.Changed("array") && o.take != "" {
		return usagef("--array makes an offer per index and takes no counter-offer: drop --take")
	}
	if o.take != "" && o.takesShown(fs) {
		if name := shaping(fs); name != "" {
			return usagef("--take %s takes a counter-offer as it was shown, on its server's terms: drop --%s (or take a server's with --take SERVER and the offer's terms)", o.take, name)
		}
		return nil
	}
	if fs.Changed("scale") && (o.scale < 0 || o.scale > contract.MaxPlaces) {
		return usagef("--scale %d: want 0..%d decimal places", o.scale, contract.MaxPlaces)
	}
	if o.wait < 0 || o.wait > protocol.MaxWait {
		return usagef("--wait %s: want more than 0 and at most %s", o.wait, protocol.MaxWait)
	}
	if o.duration < 0 {
		return usagef("--duration %s: want more than 0, or leave it out to run for the whole time limit", o.duration)
	}
	if _, err := o.prepaymentFlag(); err != nil {
		return err
	}
	if err := o.checkAuto(fs); err != nil {
		return err
	}
	base := contract.Terms{}
	if resume {
		// The suspended contract's terms come from the exchange: the
		// flags given are held to the rules on a stand-in for them.
		base = contract.Terms{GPUs: 1, TimeLimit: time.Minute, P: contract.Flat(decimal.Zero)}
	}
	t, err := o.shape(fs, base, resume)
	if err != nil {
		return err
	}
	if err := contract.ValidateShape(t); err != nil {
		return o.blame(err)
	}
	return o.checkArray(fs, t)
}

// checkAuto holds --auto and the flags that go with it to what a
// negotiation needs.
func (o *offerFlags) checkAuto(fs *pflag.FlagSet) error {
	if o.auto == "" {
		return nil
	}
	if _, ok := strategies[o.auto]; !ok && o.auto != "going" {
		return usagef("--auto %q: want fixed, cheapest, adaptive, deadline or going", o.auto)
	}
	if fs.Changed("price") || fs.Changed("p") {
		return usagef("--auto %s sets the price: drop --price and --p, and give --value", o.auto)
	}
	if o.wait != 0 {
		return usagef("--auto negotiates now: drop --wait, or --auto")
	}
	if o.value == "" {
		return usagef("--auto needs --value: the most a GPU-second of use is worth to you, e.g. --value 0.40")
	}
	value, err := amount("--value", o.value)
	if err != nil {
		return err
	}
	if !value.IsPositive() {
		return usagef("--value %s: want more than 0", value)
	}
	if o.rounds < 1 {
		return usagef("--rounds %d: want at least 1", o.rounds)
	}
	_, err = parseDeadline(o.deadline, time.Now())
	return err
}

// blame makes a broken rule of the terms a usage error that names the
// flag that gave the value (or -f's file and the field in it).
func (o *offerFlags) blame(err error) error {
	var e *bourse.Error
	if !errors.As(err, &e) {
		return err
	}
	if o.file != "" {
		return &usageError{errors.New("-f " + o.file + ": " + e.Field + ": " + e.Message)}
	}
	flag, field := flagOf(e.Field, o.price != ""), ""
	if strings.Contains(e.Field, "[") {
		field = " (" + e.Field + ")" // which breakpoint of a curve
	}
	return &usageError{errors.New("--" + flag + field + ": " + e.Message)}
}

// flagOf is the flag that sets a field of the terms; a flat price is
// --price's curve p.
func flagOf(field string, flat bool) string {
	switch {
	case field == "gpus":
		return "gpus"
	case field == "time_limit":
		return "time-limit"
	case field == "class.min_memory_mib":
		return "min-memory"
	case field == "job.profile.utilization":
		return "utilization"
	case field == "job.profile.duration":
		return "duration"
	case field == "job.image":
		return "image"
	case field == "job.command":
		return "command"
	case strings.HasPrefix(field, "job.args"):
		return "arg"
	case strings.HasPrefix(field, "p") && flat:
		return "price"
	case strings.HasPrefix(field, "p"):
		return "p"
	case strings.HasPrefix(field, "q"):
		return "q"
	}
	return field
}
