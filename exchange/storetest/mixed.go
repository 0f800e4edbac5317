package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/dectest"
)

// testConcurrentMixed runs, all at once, opens and settlements of which
// some must fail for a business reason: a store that serves concurrent
// calls together (the SQL store's group commit) must give each call the
// outcome it would have had alone, keep nothing of a failed one, and
// everything of the others.
//
//   - 8 running contracts settle; the odd ones ask to capture more than
//     their hold, which fails and leaves them running with the hold open.
//   - 8 new contracts of well-funded clients open.
//   - 4 opens of a client who can pay for one: exactly one opens.
//   - 3 opens of a client capped at 2 GPUs, each for 2 with a cap's
//     reserve beside the escrow: exactly one opens, and the others keep
//     no escrow.
func testConcurrentMixed(t *testing.T, open Opener) {
	f := newFixture(t, open)
	const capCur currency.Code = "GPU-CAP"
	require.NoError(t, f.l.CreateCurrency(f.ctx, currency.Currency{Code: capCur, Scale: 0}))
	capW := currency.WalletID(capCur, "cap")
	_, err := f.l.OpenAccount(f.ctx, currency.Account{ID: capW, Currency: capCur, Kind: currency.Wallet})
	require.NoError(t, err)
	_, err = currency.Do(f.ctx, f.l, currency.Transfer{Key: "cap", From: currency.IssuanceID(capCur), To: capW, Amount: dectest.D("2")})
	require.NoError(t, err)
	capped := f.wallet("cap", "100")
	poor := f.wallet("poor", "15")
	for i := range 4 {
		f.wallet(fmt.Sprint("rich", i), "1000")
	}
	for i := range 8 {
		f.open(newContract(fmt.Sprint("s", i), fmt.Sprint("rich", i%4), t0))
		f.run(fmt.Sprint("s", i), t0.Add(time.Minute))
	}

	type outcome struct {
		created bool
		err     error
	}
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		settles [8]error
		opens   [8]outcome
		poors   [4]outcome
		cappeds [3]outcome
		opening = func(c contract.Contract, rs ...currency.Reserve) outcome {
			_, created, err := f.s.Open(f.ctx, c, "", rs...)
			return outcome{created, err}
		}
		capReserve = func(c contract.Contract) currency.Reserve {
			return currency.Reserve{Key: "cap/" + c.ID, Hold: currency.HoldID("gpus/" + c.ID), From: capW,
				Amount: decimal.NewFromInt(int64(c.Terms.GPUs)), Deadline: c.StartDeadline.Add(25 * time.Hour)}
		}
	)
	for i := range 8 {
		wg.Go(func() {
			<-start
			charge := "2.5"
			if i%2 == 1 {
				charge = "20" // more than the hold of 10
			}
			_, settles[i] = f.s.Update(f.ctx, fmt.Sprint("s", i), func(c *contract.Contract) ([]currency.Op, error) {
				return settle(c, fmt.Sprint("settle/s", i), charge, t0.Add(time.Hour)), nil
			})
		})
		wg.Go(func() {
			<-start
			c := newContract(fmt.Sprint("n", i), fmt.Sprint("rich", i%4), t0.Add(time.Second))
			opens[i] = opening(c, reserve(c, "escrow/"+c.ID))
		})
	}
	for i := range 4 {
		wg.Go(func() {
			<-start
			c := newContract(fmt.Sprint("p", i), "poor", t0.Add(time.Second))
			poors[i] = opening(c, reserve(c, "escrow/"+c.ID))
		})
	}
	for i := range 3 {
		wg.Go(func() {
			<-start
			c := newContract(fmt.Sprint("k", i), "cap", t0.Add(time.Second))
			cappeds[i] = opening(c, reserve(c, "escrow/"+c.ID), capReserve(c))
		})
	}
	close(start)
	wg.Wait()

	for i, err := range settles {
		id := fmt.Sprint("s", i)
		if i%2 == 0 {
			assert.NoError(t, err, id)
			assert.Equal(t, contract.StateSettled, f.get(id).State, id)
			assert.Equal(t, currency.HoldCaptured, f.hold(id).Status, id)
			continue
		}
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%s: %v", id, err)
		assert.Equal(t, contract.StateRunning, f.get(id).State, id)
		assert.Equal(t, currency.HoldOpen, f.hold(id).Status, id)
	}
	f.balance(currency.RevenueID(gpu, server), "10", "0")
	for i, o := range opens {
		assert.NoError(t, o.err, "n%d", i)
		assert.True(t, o.created, "n%d", i)
	}
	one := func(name string, os []outcome, code bourse.Code) {
		t.Helper()
		created := 0
		for i, o := range os {
			if o.created {
				created++
				continue
			}
			assert.Equal(t, code, bourse.ErrorCode(o.err), "%s%d: %v", name, i, o.err)
		}
		assert.Equal(t, 1, created, "exactly one of %s's opens", name)
	}
	one("poor", poors[:], bourse.EInsufficientFunds)
	f.balance(poor, "5", "10")
	one("cap", cappeds[:], bourse.EInsufficientFunds)
	f.balance(capped, "90", "10") // no escrow of the refused ones kept
	f.balance(capW, "0", "2")

	// The failed settlements left their keys unspent: they settle now.
	for i := 1; i < 8; i += 2 {
		_, err := f.s.Update(f.ctx, fmt.Sprint("s", i), func(c *contract.Contract) ([]currency.Op, error) {
			return settle(c, fmt.Sprint("settle/s", i), "2.5", t0.Add(time.Hour)), nil
		})
		require.NoError(t, err, "s%d", i)
	}
	f.balance(currency.RevenueID(gpu, server), "20", "0")
}
