package console

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/allowance"
	"github.com/bourse/bourse/treasury"
)

// TestChanged: what actions changed, as the treasury notes it, in words.
func TestChanged(t *testing.T) {
	scales := map[currency.Code]int32{"CRED": 2, "EUR": 2, "GPUH": 0, "GPU-CAP": 0}
	for _, c := range []struct {
		name          string
		before, after map[string]string
		want          string
	}{
		{"grant", map[string]string{"issuance/CRED": "-5000", "wallet/CRED/alice": "0"}, map[string]string{"issuance/CRED": "-5800", "wallet/CRED/alice": "800"},
			"Alice's CRED wallet went from 0.00 to 800.00; the CRED supply went from 5000.00 to 5800.00."},
		{"open", nil, map[string]string{"parent": "wallet/CRED/acme"}, "Opened under wallet/CRED/acme."},
		{"open at the top", nil, map[string]string{"parent": ""}, "Opened at the top, under no other wallet."},
		{"allowance", nil, map[string]string{"allowance": `{"wallet":"wallet/CRED/carl","a":"10","b":"0.1","period_s":3600,"start":"2026-11-23T11:41:24.616449543Z"}`},
			"The allowance set to wallet wallet/CRED/carl, a 10, b 0.1, period 1h, start 2026-11-23 11:41:24 UTC."},
		{"allowance removed", map[string]string{"allowance": `{"a":"10","b":"0.1","period_s":1800}`}, nil, "The allowance removed (it was a 10, b 0.1, period 30m)."},
		{"spend cap", map[string]string{"spend-cap": `{"limit":"100","warn":"0.8"}`, "wallet/SPEND-CRED/alice@day.2026-11-25": "0"},
			map[string]string{"spend-cap": `{"limit":"150","warn":"0.8"}`, "wallet/SPEND-CRED/alice@day.2026-11-25": "150"},
			"The spend cap changed from limit 100, warn 0.8 to limit 150, warn 0.8; alice@day.2026-11-25's SPEND-CRED account went from 0 to 150."},
		{"GPU cap", map[string]string{"cap": "0", "in_use": "0", "wallet/GPU-CAP/bob": "0"}, map[string]string{"cap": "4", "wallet/GPU-CAP/bob": "4"},
			"The GPU cap changed from 0 to 4; 0 GPUs in use; bob's GPU-CAP account went from 0 to 4."},
		{"exchange", map[string]string{"wallet/CRED/alice": "800", "wallet/GPUH/alice": "0"}, map[string]string{"rate": "0.25", "wallet/CRED/alice": "760", "wallet/GPUH/alice": "10"},
			"The rate set to 0.25; alice's CRED wallet went from 800.00 to 760.00; alice's GPUH wallet went from 0 to 10."},
		{"sale", map[string]string{"wallet/EUR/sales:CRED": "0", "revenue/EUR/atlas": "1.5"}, map[string]string{"cost": "50", "wallet/EUR/sales:CRED": "50", "revenue/EUR/atlas": "1.5"},
			"The cost set to 50; sales:CRED's EUR wallet went from 0.00 to 50.00."},
		{"an account of a currency gone", nil, map[string]string{"wallet/OLD/x": "1.5"}, "X's OLD wallet is 1.5."},
		{"nothing", map[string]string{"cap": "4"}, map[string]string{"cap": "4"}, ""},
		{"not JSON", nil, map[string]string{"topup": "{broken"}, "The top-up set to {broken."},
	} {
		assert.Equal(t, c.want, changed(treasury.Action{Before: c.before, After: c.after}, scales), c.name)
	}
	// The money of an action's own currency, in its settings and figures,
	// at that currency's places too.
	for _, c := range []struct {
		name string
		a    treasury.Action
		want string
	}{
		{"spend cap", treasury.Action{Kind: treasury.KindSpendCapSet, Target: "CRED/alice/day",
			Before: map[string]string{"spend-cap": `{"limit":"100","warn":"0.8"}`}, After: map[string]string{"spend-cap": `{"limit":"150.5","warn":"0.8"}`}},
			"The spend cap changed from limit 100.00, warn 0.8 to limit 150.50, warn 0.8."},
		{"top-up", treasury.Action{Kind: treasury.KindTopUp, Target: "wallet/CRED/alice", After: map[string]string{"amount": "28"}},
			"The amount set to 28.00."},
		{"sale", treasury.Action{Kind: treasury.KindSale, Target: "bob", After: map[string]string{"cost": "50", "wallet/EUR/sales:CRED": "50"}},
			"The cost set to 50.00; sales:CRED's EUR wallet is 50.00."},
	} {
		assert.Equal(t, c.want, changed(c.a, scales), c.name)
	}
}

// TestAuditInWords: the trail's "changed" column is sentences, never a
// setting's raw JSON.
func TestAuditInWords(t *testing.T) {
	srv, tr, _ := testConsole(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	_, err := tr.Grant(ctx, "root", "CRED", "alice", d("181"), "g1", "")
	require.NoError(t, err)
	_, err = tr.SetAllowance(ctx, "root", allowance.Rule{Wallet: "wallet/CRED/alice", A: d("10"), B: d("0.1"), Period: time.Hour,
		Start: time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)}, "a1")
	require.NoError(t, err)
	_, err = tr.SetSpendCap(ctx, "root", "alice", "CRED", caps.Day, d("150"), d("0.8"), "s1")
	require.NoError(t, err)
	b := newBrowser(t, srv)
	b.login("vic")
	_, page := b.get("/audit")
	assert.NotContains(t, page, "{&#34;", "no JSON")
	assert.Contains(t, page, `<td class="changed">The allowance set to wallet wallet/CRED/alice, a 10, b 0.1, period 1h, start 2026-11-25 09:00:00 UTC.</td>`)
	assert.Contains(t, page, `The spend cap set to limit 150.00, warn 0.8;`, "its limit at CRED's places")
	assert.Contains(t, page, `<td class="changed">Alice&#39;s CRED wallet went from 0.00 to 181.00; the CRED supply went from 0.00 to 181.00.</td>`)
}
