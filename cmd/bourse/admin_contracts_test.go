package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/pgtest"
)

// TestAdminContractsAndCancel: an administrator lists every client's
// contracts by client, server, state and time, as a table and as JSON,
// and cancels one with a reason the audit trail keeps: one not started
// is voided and its prepayment released, a running one is asked to stop.
func TestAdminContractsAndCancel(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{})
	require.NoError(t, err)
	defer l.Close()
	store, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	defer store.Close()
	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	now := time.Now().UTC()
	open := func(id, client, server string, state contract.State, accepted time.Time) {
		w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("CRED", client), Currency: "CRED", Kind: currency.Wallet})
		if err != nil {
			w.ID = currency.WalletID("CRED", client) // opened before
		}
		_, err = currency.Do(ctx, l, currency.Transfer{Key: "grant/" + id, From: currency.IssuanceID("CRED"), To: w.ID, Amount: decimal.NewFromInt(10)})
		require.NoError(t, err)
		c := contract.Contract{ID: id, Client: client, Server: server, State: state, AcceptedAt: accepted, StartDeadline: now.Add(time.Hour),
			Terms: contract.Terms{Client: client, Currency: "CRED", GPUs: 1, TimeLimit: time.Hour, Prepayment: decimal.NewFromInt(3), P: contract.Flat(decimal.RequireFromString("0.01"))}}
		if state == contract.StateRunning {
			c.StartedAt, c.LastSeen, c.Model = accepted, now, "H100"
		}
		_, _, err = store.Open(ctx, c, "", currency.Reserve{Key: "escrow/" + id, Hold: currency.HoldID(id), From: w.ID, Amount: c.Terms.Prepayment, Deadline: now.Add(time.Hour)})
		require.NoError(t, err)
	}
	open("c-ada-run", "ada", "atlas", contract.StateRunning, now.Add(-time.Minute))
	open("c-ada-new", "ada", "boreal", contract.StateAccepted, now.Add(-30*time.Second))
	open("c-bob-run", "bob", "atlas", contract.StateRunning, now.Add(-20*time.Second))
	open("c-old", "bob", "atlas", contract.StateRunning, now.Add(-48*time.Hour))

	list := func(args ...string) string {
		out, errOut, code := admin(t, dbURL, append([]string{"contracts"}, args...)...)
		require.Zero(t, code, errOut)
		return out
	}
	out := list()
	assert.Regexp(t, `(?s)c-bob-run.*c-ada-new.*c-ada-run`, out, "newest first")
	assert.NotContains(t, out, "c-old", "accepted more than 24h ago")
	assert.Regexp(t, `(?m)^c-ada-run +ada +atlas +running +- +1 +H100 +3\.00 CRED `, out, "the model sold, money at CRED's places")
	assert.NotContains(t, list("--client", "ada"), "c-bob-run")
	assert.NotContains(t, list("--server", "atlas"), "c-ada-new")
	assert.NotContains(t, list("--state", "accepted"), "c-ada-run")
	assert.Contains(t, list("--since", "72h"), "c-old")
	assert.Regexp(t, `PRICE/GPU-H +GPU-S USED +METER`, list("-o", "wide"))
	var ks []contract.Contract
	js := list("--json", "--client", "bob")
	require.NoError(t, json.Unmarshal([]byte(js), &ks))
	require.Len(t, ks, 1)
	assert.Contains(t, js, `"prepayment": "3.00"`)
	_, errOut, code := admin(t, dbURL, "contracts", "--state", "gone")
	assert.Equal(t, exitUsage, code, errOut)

	_, errOut, code = admin(t, dbURL, "cancel", "c-ada-new")
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, "--reason is required")
	out, errOut, code = admin(t, dbURL, "cancel", "c-ada-new", "--reason", "wrong project", "--as", "root")
	require.Zero(t, code, errOut)
	assert.Contains(t, out, "c-ada-new voided (killed): 3.00 CRED released to ada")
	out, errOut, code = admin(t, dbURL, "cancel", "c-ada-run", "--reason", "runaway job", "--as", "root")
	require.Zero(t, code, errOut)
	assert.Contains(t, out, "c-ada-run stopping (killed asked at")
	k, err := store.Contract(ctx, "c-ada-run")
	require.NoError(t, err)
	require.NotNil(t, k.Stop, "the stop an exchange's sweep settles it by")
	assert.Equal(t, contract.ReasonKilled, k.Stop.Reason)
	var trail []struct{ Actor, Kind, Target, Memo string }
	out, errOut, code = admin(t, dbURL, "log", "--json")
	require.Zero(t, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &trail))
	var why []string
	for _, a := range trail {
		if a.Kind == "contract.cancel" && a.Actor == "root" {
			why = append(why, a.Target+": "+a.Memo)
		}
	}
	assert.ElementsMatch(t, []string{"contract/c-ada-new: wrong project", "contract/c-ada-run: runaway job"}, why)
}
