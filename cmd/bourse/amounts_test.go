package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// Prices and other quantities are written exactly (money is
// currency.Format's).
func TestExact(t *testing.T) {
	assert.Equal(t, "0.2", exact(decimal.RequireFromString("0.200000000000000000")))
	assert.Equal(t, "0.266666666666666667", exact(decimal.RequireFromString("0.266666666666666667")))
}

// TestViewNumbers draws the demo's tables: money at the market's scale,
// prices exactly.
func TestViewNumbers(t *testing.T) {
	ctx := context.Background()
	l := mem.New(mem.Options{})
	require.NoError(t, l.CreateCurrency(ctx, market.Currency))
	w, err := l.OpenAccount(ctx, currency.Account{ID: currency.WalletID(market.Currency.Code, "ada"), Currency: market.Currency.Code, Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(ctx, l, currency.Transfer{Key: "g", From: currency.IssuanceID(market.Currency.Code), To: w.ID, Amount: decimal.RequireFromString("80.8")})
	require.NoError(t, err)
	d := decimal.RequireFromString
	m := &market.Market{
		Servers: []scenario.ServerSpec{{ID: "boreal", Model: "H100", Count: 4, Policy: server.Posted{P: contract.Flat(d("0.20"))}}},
		Clients: []scenario.ClientSpec{{ID: "ada", Strategy: strategy.Fixed{}, Value: d("0.40")}},
	}
	s := market.Snapshot{
		Servers: map[string]market.ServerTally{"boreal": {Contracts: 1, Revenue: d("19.2"), LastPrice: d("0.200000000000000000"), GPUSeconds: d("1920")}},
		Clients: map[string]market.ClientTally{"ada": {Contracts: 1, Spent: d("19.2"), Refunded: d("30.8")}},
	}
	var b bytes.Buffer
	v := &view{out: &b, m: m, ledger: l}
	v.servers(&b, s, false)
	v.clients(ctx, &b, s)
	out := b.String()
	assert.Regexp(t, `boreal +reserve +4× H100 +0 +□□□□ +1 +720\.00 +19\.20\n`, out, "the last price per GPU-hour")
	assert.Regexp(t, `ada +fixed +1440\.00 +80\.80 +0\.00 +19\.20 +30\.80 +1 +0\n`, out)
}
