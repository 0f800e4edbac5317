package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/breakdown"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
)

// TestAdminTreasury runs an administrator's month on the command line:
// money in and out, a rate and an exchange, an allowance kept in the
// database and paid by "allowance run", and the audit trail that shows
// who did each.
func TestAdminTreasury(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ok := adminOK(t, dbURL)
	ok("currency", "CRED", "--scale", "2")
	ok("currency", "GPUH", "--scale", "0")
	ok("open", "acme", "--currency", "CRED", "--as", "ann")
	ok("open", "alice", "--currency", "CRED", "--parent", "acme", "--as", "ann")
	ok("grant", "alice", "100", "--currency", "CRED", "--key", "g1", "--as", "ann")
	assert.Equal(t, "burned 20.00 CRED from alice; available 80.00, held 0.00\n",
		ok("burn", "alice", "20", "--currency", "CRED", "--key", "b1", "--as", "bob"))
	_, errOut, code := admin(t, dbURL, "burn", "alice", "1000", "--currency", "CRED", "--key", "b2", "--as", "bob")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "insufficient_funds")

	_, errOut, code = admin(t, dbURL, "exchange", "alice", "CRED", "GPUH", "10", "--key", "x1", "--as", "ann")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "no rate from CRED to GPUH: an administrator sets one (bourse admin rate CRED GPUH RATE)")
	assert.Equal(t, "rate CRED/GPUH: 0.5 (was none)\n", ok("rate", "CRED", "GPUH", "0.5", "--key", "r1", "--as", "ann"))
	assert.Equal(t, "exchanged at 0.5: wallet/CRED/alice 80.00 → 70.00, wallet/GPUH/alice 0 → 5\n",
		ok("exchange", "alice", "CRED", "GPUH", "10", "--key", "x1", "--as", "ann"))
	assert.Contains(t, ok("rates"), "CRED  GPUH  0.5   ann")
	// Money at CRED's places, and where each mint went or burn came from.
	assert.Regexp(t, `(?m)^\S+ +\+100\.00 +100\.00 +wallet/CRED/alice +g1 *\n\S+ +-20\.00 +80\.00 +wallet/CRED/alice +b1 *\n\S+ +-10\.00 +70\.00 +wallet/CRED/alice +x1 +exchange at 0.5\n`, ok("supply", "CRED"))

	ok("allowance", "set", "alice", "--currency", "CRED", "--a", "10", "--b", "0.1", "--period", "1h", "--start", "2026-11-01T00:00:00Z", "--key", "a1", "--as", "ann")
	assert.Contains(t, ok("allowance", "list"), "wallet/CRED/alice  a = 10/h, b = 0.1/h, every 1h0m0s from 2026-11-01T00:00:00Z; steady state 100.00, half-life 6h55m53s")
	paid := ok("allowance", "run", "--now", "2026-11-01T02:00:00Z")
	assert.Contains(t, paid, "allowance/wallet/CRED/alice/v1/2", "rules from the database, no --rules")
	assert.Equal(t, "nothing due: every period that has ended is paid\n", ok("allowance", "run", "--now", "2026-11-01T02:30:00Z"))
	ok("allowance", "remove", "alice", "--currency", "CRED", "--key", "a2", "--as", "bob")
	_, errOut, code = admin(t, dbURL, "allowance", "run")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no allowances are set")

	var trail []treasury.Action
	require.NoError(t, json.Unmarshal([]byte(ok("log", "--json")), &trail))
	var who []string
	for _, a := range trail {
		who = append(who, a.Actor+" "+a.Kind+" "+a.Key)
	}
	assert.Equal(t, []string{"bob allowance.remove a2", "ann allowance.set a1", "ann exchange x1", "ann rate.set r1",
		"bob burn b1", "ann grant g1", "ann open open/wallet/CRED/alice", "ann open open/wallet/CRED/acme",
		"root currency currency/GPUH", "root currency currency/CRED"}, who,
		"newest first; the refused burn and exchange left nothing")
	// The trail's balances at each currency's places, in the table and in
	// JSON (the ledger notes 100, a person reads 100.00).
	assert.Regexp(t, `ann +grant +wallet/CRED/alice +g1 +issuance/CRED: 0\.00 → -100\.00; wallet/CRED/alice: 0\.00 → 100\.00`, ok("log"))
	assert.Regexp(t, `ann +exchange +alice +x1 +rate: 0\.5; wallet/CRED/alice: 80\.00 → 70\.00; wallet/GPUH/alice: 0 → 5`, ok("log"))
	assert.Contains(t, ok("log", "--json"), `"wallet/CRED/alice": "100.00"`)
	// An allowance's rule as allowance list writes it, its steady state
	// at CRED's places; JSON keeps the rule as the trail stores it.
	rule := `a = 10/h, b = 0\.1/h, every 1h0m0s from 2026-11-01T00:00:00Z; steady state 100\.00, half-life 6h55m53s`
	assert.Regexp(t, `(?m)^\S+ +ann +allowance\.set +wallet/CRED/alice +a1 +allowance: `+rule+`$`, ok("log"))
	assert.Regexp(t, `(?m)^\S+ +bob +allowance\.remove +wallet/CRED/alice +a2 +allowance: `+rule+` → none$`, ok("log"))
	assert.Contains(t, ok("log", "--json"), `"allowance": "{\"wallet\":\"wallet/CRED/alice\",\"a\":\"10\",\"b\":\"0.1\",\"period_s\":3600,`)
	assert.Contains(t, ok("audit"), ": pass")
}

// TestAdminSpendCap sets, lists and removes spend caps on the command line.
func TestAdminSpendCap(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ok := adminOK(t, dbURL)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "acme", "--currency", "CRED")
	ok("open", "alice", "--currency", "CRED", "--parent", "acme")
	assert.Equal(t, "acme may commit 500.00 CRED a month; warned at 80%\n",
		ok("spend-cap", "acme", "500", "--currency", "CRED", "--period", "month", "--key", "s1", "--as", "ann"))
	ok("spend-cap", "alice", "50", "--currency", "CRED", "--warn", "0.9", "--key", "s2", "--as", "ann")
	assert.Regexp(t, `acme +CRED +month +500\.00 +0\.00 +0\.00 +0 +80\nalice +CRED +day +50\.00 +0\.00 +0\.00 +0 +90\n`, ok("spend-caps"))
	capsJSON := ok("spend-caps", "--json")
	for _, want := range []string{`"limit": "500.00"`, `"used": "0.00"`, `"held": "0.00"`, `"warn": "0.8"`} {
		assert.Contains(t, capsJSON, want, "money at CRED's places in JSON too, a share as it is")
	}
	_, errOut, code := admin(t, dbURL, "spend-cap", "alice", "50", "--currency", "CRED", "--period", "week", "--key", "s3")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, `"week": hour, day or month`)
	assert.Equal(t, "alice: no day spend cap in CRED\n", ok("spend-cap", "alice", "0", "--currency", "CRED", "--key", "s4"))
	assert.NotContains(t, ok("spend-caps"), "alice")
	assert.Contains(t, ok("log"), "spend-cap.set")

	assert.Equal(t, "alice may commit up to 30.00 CRED at once, refilled at 10.00 an hour\n",
		ok("spend-rate", "set", "alice", "30", "--currency", "CRED", "--per-hour", "10", "--key", "r1"))
	assert.Regexp(t, `alice +CRED +rate +30\.00 +0\.00 +0\.00 +0 +80`, ok("spend-caps"))
	// A full bucket gets nothing, whether or not a minute turned meanwhile.
	assert.Regexp(t, `^(every bucket is refilled to now|wallet/SPEND-CRED/alice@rate.bucket: \+0\.00 for 1 steps)\n$`, ok("spend-rate", "refill"))
	_, errOut, code = admin(t, dbURL, "spend-rate", "set", "alice", "30", "--currency", "CRED", "--key", "r2")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "a bucket refills at a rate above zero")

	ok("grant", "acme", "100", "--currency", "CRED", "--key", "g-acme")
	assert.Equal(t, "wallet/CRED/alice: topped up to 30.00 from its parent when below 10.00\n",
		ok("topup", "set", "alice", "--currency", "CRED", "--below", "10", "--to", "30", "--key", "t1"))
	assert.Regexp(t, `wallet/CRED/alice +10\.00 +30\.00 +1m0s`, ok("topup", "list"))
	assert.Regexp(t, `"below": "10\.00",\s+"to": "30\.00"`, ok("topup", "list", "--json"))
	assert.Regexp(t, `"amount": "30\.00"`, ok("topup", "run", "--as", "cron", "--json"))
	assert.Equal(t, "no wallet is below its threshold\n", ok("topup", "run"))
	assert.Contains(t, ok("balance", "wallet/CRED/acme"), "available 70.00")
	_, errOut, code = admin(t, dbURL, "topup", "set", "acme", "--currency", "CRED", "--below", "1", "--to", "2", "--key", "t2")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "has no parent wallet")
}

// TestAdminReport runs a short demo market on PostgreSQL and reads its
// cost report: every client that spent is in it, and the servers' lines
// add up to the same revenue as the clients'.
func TestAdminReport(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	_, errOut, code := bourseCmd("demo", "--db", dbURL, "--duration", "3s")
	require.Equal(t, 0, code, errOut)
	ok := adminOK(t, dbURL)
	var r breakdown.Report
	require.NoError(t, json.Unmarshal([]byte(ok("report", "--format", "json", "--capacity", "atlas=8,boreal=4")), &r))
	require.NotEmpty(t, r.Lines)
	cost, revenue := decimal.Zero, decimal.Zero
	for _, l := range r.Lines {
		cost = cost.Add(l.Cost)
	}
	idle := false
	var atlas decimal.Decimal
	for _, s := range r.Servers {
		revenue = revenue.Add(s.Revenue)
		idle = idle || s.Server == "atlas" && s.Idle.IsPositive()
		if s.Server == "atlas" {
			atlas = atlas.Add(s.Capacity)
		}
	}
	// From atlas's first hello, in the demo, up to now: minutes, not the
	// week of days before it the report spans.
	assert.True(t, atlas.LessThan(decimal.NewFromInt(8*10*60)), "atlas's capacity %s GPU-seconds", atlas)
	assert.True(t, cost.IsPositive())
	assert.True(t, cost.Equal(revenue), "clients' cost %s, servers' revenue %s", cost, revenue)
	assert.True(t, idle, "atlas's idle line")
	table := ok("report", "--by", "month")
	assert.Contains(t, table, "PER GPU-HOUR  PER GPU-SECOND")
	assert.Regexp(t, `\n\d{4}-\d\d +- +- +\w+ +\w+ +\d+ `, table)
	csvOut := ok("report", "--format", "csv")
	assert.True(t, strings.HasPrefix(csvOut, "period,currency,org,project,client,model,contracts,gpu_seconds,cost\n"))
	_, errOut, code = admin(t, dbURL, "report", "--capacity", "atlas")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "SERVER=GPUS")
}
