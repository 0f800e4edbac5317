package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/bourse/bourse/server"
)

// priceFlags set the prices of bourse server's policy (policy.p and
// policy.q of its configuration), in the words bourse bid offer uses for
// the same curves: --price for a flat price per GPU-second of use, --p and
// --q for curves of x:y breakpoints.
type priceFlags struct {
	price, p, q string
}

func (pf *priceFlags) add(f *pflag.FlagSet) {
	f.StringVar(&pf.price, "price", "", "the least the server takes per GPU-second of use, at any rate of use (policy.p: [[0, PRICE]])")
	f.StringVar(&pf.p, "p", "", "the least it takes per GPU-second by rate of use, as x:y breakpoints: '0.5:0,2:0.004' (policy.p)")
	f.StringVar(&pf.q, "q", "", "the least it takes per second by GPUs guaranteed, as x:y breakpoints (policy.q)")
}

// apply puts the flags that were set over the configuration's curves.
func (pf *priceFlags) apply(cmd *cobra.Command, c *serverConfig) error {
	set := cmd.Flags().Changed
	if set("price") && set("p") {
		return errors.New("give --price or --p, not both")
	}
	if set("price") {
		d, err := amount("--price", pf.price)
		if err != nil {
			return err
		}
		c.Policy.P = [][]string{{"0", d.String()}}
	}
	for _, f := range []struct {
		name, value string
		dst         *[][]string
	}{{"p", pf.p, &c.Policy.P}, {"q", pf.q, &c.Policy.Q}} {
		if !set(f.name) {
			continue
		}
		cv, err := parseCurve("--"+f.name, f.value)
		if err != nil {
			return err
		}
		*f.dst = nil
		for _, pt := range cv {
			*f.dst = append(*f.dst, []string{pt.X.String(), pt.Y.String()})
		}
	}
	return nil
}

// policyLine is what the server prints at its start about what it takes:
// its policy and least prices, or, where it has none, that it takes any
// price and how to set one, so that no operator runs a free server
// without a word.
func (c *serverConfig) policyLine() string {
	kind := c.Policy.Kind
	if kind == "" || kind == "posted" {
		kind = "reserve"
	}
	curve := func(pairs [][]string) string {
		var pts []string
		for _, p := range pairs {
			pts = append(pts, strings.Join(p, ":"))
		}
		return strings.Join(pts, ",")
	}
	if len(c.Policy.P) == 0 && len(c.Policy.Q) == 0 {
		return fmt.Sprintf("policy: %s: takes any price, for neither policy.p nor policy.q is set (--price 0.30 asks at least 0.30 per GPU-second of use)", kind)
	}
	var parts []string
	if len(c.Policy.P) > 0 {
		parts = append(parts, "p "+curve(c.Policy.P)+" per GPU-second of use by rate")
	}
	if len(c.Policy.Q) > 0 {
		parts = append(parts, "q "+curve(c.Policy.Q)+" per second by GPUs guaranteed")
	}
	line := fmt.Sprintf("policy: %s: takes offers paying at least %s", kind, strings.Join(parts, " and "))
	if c.Policy.K != "" {
		line += ", times 1 + " + c.Policy.K + " × the share of GPUs in use"
	}
	if pol, err := c.Policy.Build(); err == nil && server.LearnerOf(pol) != nil {
		line += " times a multiple" + learningLine(server.LearnerOf(pol))
	}
	return line
}
