package main

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/spf13/cobra"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
)

// TestServerPriceFlags: --price, --p and --q set the reserve policy's
// prices over the configuration's, and a server so priced no longer takes
// an offer of 0.01 a GPU-second; the start line says what it takes, and
// that it takes anything where no price is set.
func TestServerPriceFlags(t *testing.T) {
	parse := func(t *testing.T, config string, args ...string) (serverConfig, error) {
		t.Helper()
		cfg, err := parseServerConfig("s.yaml", []byte(config))
		if err != nil {
			t.Fatal(err)
		}
		var pf priceFlags
		cmd := &cobra.Command{}
		pf.add(cmd.Flags())
		if err := cmd.Flags().Parse(args); err != nil {
			t.Fatal(err)
		}
		return cfg, pf.apply(cmd, &cfg)
	}
	offer := contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1, TimeLimit: time.Minute,
		P: contract.Flat(decimal.RequireFromString("0.01")), Prepayment: decimal.RequireFromString("0.60")}
	view := server.View{Now: time.Now(), Scale: 2, GPUs: []contract.GPU{{Index: 0}}, Free: []contract.GPU{{Index: 0}}}

	t.Run("None", func(t *testing.T) {
		cfg, err := parse(t, "policy: {kind: reserve}\n")
		if err != nil {
			t.Fatal(err)
		}
		pol, err := cfg.policy()
		if err != nil || !pol.Decide(offer, view).Accept {
			t.Fatalf("an unpriced reserve should take the offer: %v", err)
		}
		if line := cfg.policyLine(); !strings.HasPrefix(line, "policy: reserve: takes any price") || !strings.Contains(line, "--price") {
			t.Errorf("line %q: want it to say the server takes any price, and how to set one", line)
		}
	})
	t.Run("Price", func(t *testing.T) {
		cfg, err := parse(t, "policy: {kind: reserve, p: [['0', '0.001']]}\n", "--price", "0.30")
		if err != nil {
			t.Fatal(err)
		}
		pol, err := cfg.policy()
		if err != nil {
			t.Fatal(err)
		}
		d := pol.Decide(offer, view)
		if d.Accept || len(d.Counters) != 1 || !d.Counters[0].P.Equal(contract.Flat(decimal.RequireFromString("0.30"))) {
			t.Errorf("decision %+v; want a counter at the flag's 0.30", d)
		}
		if line, want := cfg.policyLine(), "policy: reserve: takes offers paying at least p 0:0.3 per GPU-second of use by rate"; line != want {
			t.Errorf("line %q, want %q", line, want)
		}
	})
	t.Run("Curves", func(t *testing.T) {
		cfg, err := parse(t, "policy: {kind: utilisation, k: '1'}\n", "--p", "0.5:0,2:0.004", "--q", "0:0.001")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cfg.policy(); err != nil {
			t.Fatal(err)
		}
		want := "policy: utilisation: takes offers paying at least p 0.5:0,2:0.004 per GPU-second of use by rate and q 0:0.001 per second by GPUs guaranteed, times 1 + 1 × the share of GPUs in use"
		if line := cfg.policyLine(); line != want {
			t.Errorf("line %q, want %q", line, want)
		}
	})
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"Both", []string{"--price", "1", "--p", "0:1"}, "give --price or --p, not both"},
		{"BadPrice", []string{"--price", "cheap"}, "--price"},
		{"BadCurve", []string{"--p", "2:1,1:2"}, "--p"},
		{"NotPairs", []string{"--q", "0.5"}, "is not x:y"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parse(t, "", tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("apply = %v, want an error holding %q", err, tt.want)
			}
		})
	}
}
