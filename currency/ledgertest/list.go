package ledgertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// testListing pages through accounts by currency and kind, in ID order.
func testListing(t *testing.T, open Opener) {
	f := newFixture(t, open)
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: "CPU", Scale: 0}))
	for _, o := range []string{"carol", "alice", "bob"} {
		f.wallet(o)
	}
	f.revenue("gpu1")
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.WalletID("CPU", "alice"), Currency: "CPU", Kind: currency.Wallet})
	require.NoError(t, err)

	cs, err := f.l.Currencies(f.ctx)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, []currency.Code{"CPU", "GPU"}, []currency.Code{cs[0].Code, cs[1].Code})
	assert.Equal(t, int32(0), cs[0].Scale)

	ids := func(q currency.AccountQuery) []currency.AccountID {
		as, err := f.l.Accounts(f.ctx, q)
		require.NoError(t, err)
		var out []currency.AccountID
		for _, a := range as {
			out = append(out, a.ID)
		}
		return out
	}
	assert.Equal(t, []currency.AccountID{"wallet/GPU/alice", "wallet/GPU/bob", "wallet/GPU/carol"},
		ids(currency.AccountQuery{Currency: gpu, Kind: currency.Wallet}))
	assert.Equal(t, []currency.AccountID{"issuance/GPU", "revenue/GPU/gpu1", "wallet/GPU/alice", "wallet/GPU/bob", "wallet/GPU/carol"},
		ids(currency.AccountQuery{Currency: gpu}))
	assert.Equal(t, []currency.AccountID{"wallet/CPU/alice", "wallet/GPU/alice"},
		ids(currency.AccountQuery{Kind: currency.Wallet, Limit: 2}))
	assert.Equal(t, []currency.AccountID{"wallet/GPU/bob", "wallet/GPU/carol"},
		ids(currency.AccountQuery{Kind: currency.Wallet, After: "wallet/GPU/alice"}), "the next page starts after the last ID")
	assert.Empty(t, ids(currency.AccountQuery{Currency: "NONE"}))
}

// testBalances reads several balances at once, as Balance reads each;
// accounts that do not exist are left out.
func testBalances(t *testing.T, open Opener) {
	f := newFixture(t, open)
	alice, bob := f.wallet("alice"), f.wallet("bob")
	f.mint("m1", alice, "100")
	f.ok(currency.Reserve{Key: "r1", Hold: "h1", From: alice, Amount: dectest.D("30"), Deadline: f.clock.Now().Add(time.Hour)})

	ids := []currency.AccountID{alice, bob, currency.WalletID(gpu, "nobody"), alice}
	got, err := f.l.Balances(f.ctx, ids...)
	require.NoError(t, err)
	require.Len(t, got, len(ids))
	for i, id := range ids {
		if i == 2 {
			assert.Equal(t, currency.Balance{}, got[i], "no such account")
			continue
		}
		one, err := f.l.Balance(f.ctx, id)
		require.NoError(t, err)
		assert.Equal(t, one.Account, got[i].Account)
		assert.Equal(t, one.Currency, got[i].Currency)
		assert.True(t, one.Available.Equal(got[i].Available) && one.Held.Equal(got[i].Held), "%s: %+v, one at a time %+v", id, got[i], one)
	}
	assert.True(t, got[0].Available.Equal(dectest.D("70")) && got[0].Held.Equal(dectest.D("30")), "%+v", got[0])

	none, err := f.l.Balances(f.ctx)
	require.NoError(t, err)
	assert.Empty(t, none)
}
