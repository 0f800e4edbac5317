package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
)

// TestAdminSale sells CRED for EUR on the command line: the EUR a buyer
// paid by bank transfer granted, a price set, a sale (and its replay),
// one the buyer cannot pay, and the proceeds taken out.
func TestAdminSale(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ok := adminOK(t, dbURL)
	ok("currency", "CRED", "--scale", "2")
	ok("currency", "EUR", "--scale", "2")
	ok("open", "acme", "--currency", "CRED")
	ok("open", "acme", "--currency", "EUR")
	ok("open", "bob", "--currency", "EUR", "--parent", "acme")
	ok("grant", "bob", "100", "--currency", "EUR", "--key", "paid-bob-1", "--memo", "bank transfer 2026-11-24", "--as", "ann")

	_, errOut, code := admin(t, dbURL, "sell", "bob", "CRED", "EUR", "10", "--key", "s1", "--as", "ann")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "CRED is not sold for EUR: an administrator sets a price (bourse admin price set CRED EUR PRICE)")
	_, errOut, code = admin(t, dbURL, "price", "set", "CRED", "EUR", "1.25", "--as", "ann")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--key is required")
	_, errOut, code = admin(t, dbURL, "price", "set", "CRED", "CRED", "1.25", "--key", "p0", "--as", "ann")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "invalid: paid_in")
	assert.Equal(t, "price CRED/EUR: 1.25 (was none)\n", ok("price", "set", "CRED", "EUR", "1.25", "--key", "p1", "--as", "ann"))
	assert.Regexp(t, `(?m)^SOLD +PAID IN +PRICE +SET BY +SET AT\nCRED +EUR +1.25 +ann +\S+\n$`, ok("prices"))
	var ps []treasury.Price
	require.NoError(t, json.Unmarshal([]byte(ok("prices", "--json")), &ps))
	require.Len(t, ps, 1)
	assert.Equal(t, "1.25", ps[0].Price.String())

	first := ok("sell", "bob", "CRED", "EUR", "10.01", "--key", "s1", "--as", "bob-ops")
	assert.Equal(t, "sold 10.01 CRED to bob at 1.25 EUR for 12.52 EUR: wallet/EUR/bob 100.00 → 87.48, wallet/CRED/bob 0.00 → 10.01\n", first,
		"10.01 × 1.25 = 12.5125, rounded up")
	assert.Equal(t, first, ok("sell", "bob", "CRED", "EUR", "10.010", "--key", "s1", "--as", "bob-ops"), "the same sale again")
	_, errOut, code = admin(t, dbURL, "sell", "bob", "CRED", "EUR", "20", "--key", "s1", "--as", "bob-ops")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "idempotency_conflict")
	_, errOut, code = admin(t, dbURL, "sell", "bob", "CRED", "EUR", "1000", "--key", "s2", "--as", "bob-ops")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "insufficient_funds")
	_, errOut, code = admin(t, dbURL, "sell", "bob", "CRED", "EUR", "0.001", "--key", "s3", "--as", "bob-ops")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "invalid: amount")
	var a treasury.Action
	require.NoError(t, json.Unmarshal([]byte(ok("sell", "bob", "CRED", "EUR", "1", "--key", "s4", "--json")), &a))
	assert.Equal(t, "1.25", a.After["cost"])
	require.NoError(t, json.Unmarshal([]byte(ok("sell", "bob", "CRED", "EUR", "10.01", "--key", "s1", "--json")), &a), "the first sale again")
	assert.Equal(t, map[string]string{"wallet/CRED/bob": "0.00", "wallet/EUR/bob": "100.00", "wallet/EUR/sales:CRED": "0.00", "issuance/CRED": "0.00"}, a.Before,
		"the balances before it at their currencies' places (the ledger notes 100 and 0)")

	assert.Contains(t, ok("balance", "wallet/CRED/bob"), "available 11.01 CRED")
	assert.Contains(t, ok("balance", "wallet/EUR/sales:CRED"), "available 13.77 EUR")
	assert.Regexp(t, `(?m)^\S+ +\+10\.01 +10\.01 +wallet/CRED/bob +s1 +sale at 1.25 EUR per CRED\n\S+ +\+1\.00 +11\.01 +wallet/CRED/bob +s4 +sale at 1.25 EUR per CRED\n`, ok("supply", "CRED"))
	assert.Regexp(t, `bob-ops +sale +bob +s1 +cost: 12.52; issuance/CRED: 0.00 → -10.01; price: 1.25; wallet/CRED/bob: 0.00 → 10.01; wallet/EUR/bob: 100.00 → 87.48; wallet/EUR/sales:CRED: 0.00 → 12.52`, ok("log"))
	ok("burn", "sales:CRED", "13.77", "--currency", "EUR", "--key", "paid-out-1", "--memo", "to the bank")
	assert.Equal(t, "price CRED/EUR: none (was 1.25)\n", ok("price", "set", "CRED", "EUR", "0", "--key", "p2"))
	assert.Equal(t, "SOLD  PAID IN  PRICE  SET BY  SET AT\n", ok("prices"))
	assert.Contains(t, ok("audit"), ": pass")
}
