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

// TestAdminStuck: an operator lists the contracts the sweep fails to
// settle, as a table and as JSON.
func TestAdminStuck(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, dbURL, sqlledger.Options{})
	require.NoError(t, err)
	defer l.Close()
	store, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	defer store.Close()

	out, errOut, code := admin(t, dbURL, "stuck")
	require.Zero(t, code, errOut)
	assert.Contains(t, out, "no stuck contracts")

	require.NoError(t, l.CreateCurrency(ctx, currency.Currency{Code: "CRED", Scale: 2}))
	w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID("CRED", "alice"), Currency: "CRED", Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "grant", From: currency.IssuanceID("CRED"), To: w.ID, Amount: decimal.NewFromInt(10)})
	require.NoError(t, err)
	now := time.Now().UTC()
	c := contract.Contract{ID: "c-stuck", Client: "alice", Server: "ghost", State: contract.StateRunning, AcceptedAt: now, StartDeadline: now,
		Terms: contract.Terms{Client: "alice", Currency: "CRED", GPUs: 1, TimeLimit: time.Hour, Prepayment: decimal.NewFromInt(3), P: contract.Flat(decimal.RequireFromString("0.01"))},
		Stuck: &contract.Stuck{Since: now, Attempts: 4, Retry: now.Add(time.Minute), Error: "no account revenue/CRED/ghost"}}
	_, _, err = store.Open(ctx, c, "", currency.Reserve{Key: "escrow/c-stuck", Hold: "c-stuck", From: w.ID, Amount: c.Terms.Prepayment, Deadline: now.Add(time.Hour)})
	require.NoError(t, err)

	out, errOut, code = admin(t, dbURL, "stuck")
	require.Zero(t, code, errOut)
	for _, s := range []string{"CONTRACT", "c-stuck", "alice", "ghost", "running", "3.00 CRED", "no account revenue/CRED/ghost"} {
		assert.Contains(t, out, s)
	}
	out, errOut, code = admin(t, dbURL, "stuck", "--json")
	require.Zero(t, code, errOut)
	var cs []contract.Contract
	require.NoError(t, json.Unmarshal([]byte(out), &cs))
	require.Len(t, cs, 1)
	assert.Equal(t, 4, cs[0].Stuck.Attempts)
}
