package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/treasury"
)

// TestDemoGrant: the demo's you, having spent its money, gets more from
// the command line (the demo's ledger is out of bourse admin's reach),
// within the faucet's most at a time; the bots get none; and each grant
// is in the treasury's audit trail.
func TestDemoGrant(t *testing.T) {
	m := markettest.Start(t, market.Config{Clients: []scenario.ClientSpec{}, Servers: []scenario.ServerSpec{},
		Wallets: []market.Wallet{{ID: "you", Budget: decimal.NewFromInt(1)}, {ID: "bot", Budget: decimal.NewFromInt(1)}}, Faucet: demoFaucet})
	grant := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"demo", "grant", "--nats", m.URL()}, args...), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	out, errOut, code := grant()
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "granted 100.00 CRED to you; available now 101.00 CRED\n", out)
	out, errOut, code = grant("--id", "you", "12.5")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "granted 12.50 CRED to you; available now 113.50 CRED\n", out)

	_, errOut, code = grant("1000.01")
	assert.Equal(t, exitFailure, code, errOut)
	assert.Contains(t, errOut, "grants at most 1000.00 CRED at a time")
	_, errOut, code = grant("0")
	assert.Equal(t, exitUsage, code, errOut)
	_, errOut, code = grant("--id", "ada", "5")
	assert.Equal(t, exitRefused, code, errOut)
	assert.Contains(t, errOut, "grants to you, bot alone, not to ada")

	acts, err := m.Treasury().Actions(context.Background(), "", 100)
	require.NoError(t, err)
	faucet := 0
	for _, a := range acts {
		if a.Actor == "demo-faucet" && a.Kind == treasury.KindGrant {
			faucet++
		}
	}
	assert.Equal(t, 2, faucet, "each grant in the audit trail")
}
