package caps_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// limits are spend caps kept in a map, as the treasury's cache answers.
type limits map[string][]caps.Spend

func (l limits) SpendCaps(_ context.Context, owner string, _ currency.Code) ([]caps.Spend, error) {
	return l[owner], nil
}

// freshLimits answers from a stale copy, and afresh from the store.
type freshLimits struct{ stale, store limits }

func (f freshLimits) SpendCaps(ctx context.Context, owner string, cur currency.Code) ([]caps.Spend, error) {
	return f.stale.SpendCaps(ctx, owner, cur)
}

func (f freshLimits) FreshSpendCaps(ctx context.Context, owner string, cur currency.Code) ([]caps.Spend, error) {
	return f.store.SpendCaps(ctx, owner, cur)
}

// admitting is alice, under acme, with 100 CRED, a GPU cap of 1 and a
// daily spend cap of 10 warned at half; acme has no cap.
type admitting struct {
	*fixture
	periods *caps.Periods
	offer   caps.Offer
}

func newAdmitting(t *testing.T) *admitting {
	f := newFixture(t)
	for _, o := range []string{"acme", "alice"} {
		_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: currency.WalletID("CRED", o), Currency: "CRED", Kind: currency.Wallet})
		require.NoError(t, err)
	}
	w, err := caps.OpenGPUWallet(f.ctx, f.l, "alice")
	require.NoError(t, err)
	f.do(currency.Transfer{Key: "cap", From: currency.IssuanceID(caps.GPUCode), To: w, Amount: dectest.D("1")})
	return &admitting{fixture: f, periods: caps.NewPeriods(f.clock),
		offer: caps.Offer{Owners: []string{"alice", "acme"}, Currency: "CRED", GPUs: 1, Prepayment: dectest.D("6"), Scale: 2}}
}

func (a *admitting) admit(l caps.Limits) (caps.Admission, error) {
	a.t.Helper()
	bals, err := a.l.Balances(a.ctx, caps.GPUWallet("alice"), caps.GPUWallet("acme"))
	require.NoError(a.t, err)
	return a.periods.Admit(a.ctx, a.l, l, a.offer, bals)
}

// escrow applies an admitted contract's reserves, as the store does with
// its escrow's.
func (a *admitting) escrow(adm caps.Admission, id string) (contract.Contract, error) {
	c := contract.Contract{ID: id, Client: "alice", Terms: contract.Terms{Currency: "CRED", GPUs: 1, Prepayment: dectest.D("6")}}
	var ops []currency.Op
	for _, r := range adm.Reserves(&c, "o-"+id, a.now.Add(time.Hour)) {
		ops = append(ops, r)
	}
	rs, err := a.l.ApplyAtomic(a.ctx, ops...)
	require.NoError(a.t, err)
	for _, r := range rs {
		if r.Err != nil {
			return c, r.Err
		}
	}
	return c, nil
}

func TestAdmit(t *testing.T) {
	daily := limits{"alice": {{Owner: "alice", Currency: "CRED", Period: caps.Day, Limit: dectest.D("10"), Warn: dectest.D("0.5")}}}

	t.Run("ReservesAndWarns", func(t *testing.T) {
		a := newAdmitting(t)
		adm, err := a.admit(daily)
		require.NoError(t, err)
		budget := caps.BudgetWallet("alice", "CRED", caps.Day, a.now)
		avail, _ := a.balance(budget)
		assert.Equal(t, "10", avail, "the day's budget, minted with the limit")

		c, err := a.escrow(adm, "c1")
		require.NoError(t, err)
		assert.Equal(t, []string{"gpus/c1"}, c.CapHolds)
		assert.Equal(t, []string{"spend/c1/0"}, c.SpendHolds)
		avail, held := a.balance(caps.GPUWallet("alice"))
		assert.Equal(t, []string{"0", "1"}, []string{avail, held})
		assert.Equal(t, []string{"day spend cap of alice: 6.00 of 10.00 CRED used this day (60%); offers past it are refused until 2026-11-25T00:00:00Z"},
			adm.Warnings(a.ctx, a.l))

		_, err = a.admit(daily)
		assert.Equal(t, bourse.ECapExceeded, bourse.ErrorCode(err))
		assert.Contains(t, err.Error(), "concurrent-GPU cap of alice: 1 of 1 GPUs in use, 1 more asked")
		a.audit()
	})
	t.Run("SpendRefused", func(t *testing.T) {
		a := newAdmitting(t)
		a.offer.Prepayment = dectest.D("10.01")
		_, err := a.admit(daily)
		assert.Equal(t, bourse.ECapExceeded, bourse.ErrorCode(err))
		assert.Contains(t, err.Error(), "day spend cap of alice: 0.00 of 10.00 CRED charged or held this day, a prepayment of 10.01 asked; it frees as contracts settle and renews at 2026-11-25T00:00:00Z")
	})
	t.Run("RefusalAfterARace", func(t *testing.T) {
		a := newAdmitting(t)
		first, err := a.admit(daily)
		require.NoError(t, err)
		second, err := a.admit(daily)
		require.NoError(t, err, "both fit when checked")
		funds := &bourse.Error{Code: bourse.EInsufficientFunds, Message: "the client's own wallet"}
		assert.Equal(t, funds, first.Refusal(a.ctx, a.l, funds), "no cap is short: the escrow's own failure")
		_, err = a.escrow(first, "c1")
		require.NoError(t, err)
		_, err = a.escrow(second, "c2")
		require.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err))
		refused := second.Refusal(a.ctx, a.l, err)
		assert.Equal(t, bourse.ECapExceeded, bourse.ErrorCode(refused))
		assert.Contains(t, refused.Error(), "concurrent-GPU cap of alice", "the first cap that cannot take it")
	})
	t.Run("BudgetMadeOncePerPeriod", func(t *testing.T) {
		a := newAdmitting(t)
		a.offer.GPUs = 0
		_, err := a.admit(daily)
		require.NoError(t, err)
		raised := limits{"alice": {{Owner: "alice", Currency: "CRED", Period: caps.Day, Limit: dectest.D("50")}}}
		_, err = a.admit(raised)
		require.NoError(t, err)
		avail, _ := a.balance(caps.BudgetWallet("alice", "CRED", caps.Day, a.now))
		assert.Equal(t, "10", avail, "a period's budget is minted once: the treasury brings it to a new limit")

		a.now = a.now.Add(24 * time.Hour)
		_, err = a.admit(freshLimits{stale: daily, store: raised})
		require.NoError(t, err)
		avail, _ = a.balance(caps.BudgetWallet("alice", "CRED", caps.Day, a.now))
		assert.Equal(t, "50", avail, "the next day's, minted with the limit read afresh")
		a.audit()
	})
	t.Run("NoLimits", func(t *testing.T) {
		a := newAdmitting(t)
		adm, err := a.admit(nil)
		require.NoError(t, err)
		c, err := a.escrow(adm, "c1")
		require.NoError(t, err)
		assert.Empty(t, c.SpendHolds)
		assert.Empty(t, adm.Warnings(a.ctx, a.l))
	})
}
