package exchange_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/protocol"
)

// countingStore counts the reads an offer makes before it negotiates:
// the request's lock alone, the lock with the funds, and the ledger's
// Balances on their own.
type countingStore struct {
	exchange.Store
	ledger               countingLedger
	locks, locksWithFund *atomic.Int64
}

type countingLedger struct {
	currency.Ledger
	balances *atomic.Int64
}

func (s countingStore) Ledger() currency.Ledger { return s.ledger }

func (s countingStore) Lock(ctx context.Context, c exchange.Lock, now time.Time) (exchange.Locked, error) {
	s.locks.Add(1)
	return s.Store.Lock(ctx, c, now)
}

func (s countingStore) LockFunds(ctx context.Context, c exchange.Lock, now time.Time, accounts ...currency.AccountID) (exchange.Locked, []currency.Balance, error) {
	s.locksWithFund.Add(1)
	return s.Store.LockFunds(ctx, c, now, accounts...)
}

func (l countingLedger) Balances(ctx context.Context, ids ...currency.AccountID) ([]currency.Balance, error) {
	l.balances.Add(1)
	return l.Ledger.Balances(ctx, ids...)
}

// TestOfferFundsWithLock: once the exchange knows the owners of a
// client's caps (after its first offer), an offer reads its funds with
// its request's lock (Store.LockFunds, one round trip on a database)
// and nothing else before it negotiates; those funds still refuse an
// offer the client cannot pay before any server is asked.
func TestOfferFundsWithLock(t *testing.T) {
	inner := memstore.New(mem.New(mem.Options{}))
	var locks, withFunds, balances atomic.Int64
	store := countingStore{Store: inner, ledger: countingLedger{Ledger: inner.Ledger(), balances: &balances},
		locks: &locks, locksWithFund: &withFunds}
	h := housetest.NewOn(t, store, exchange.Config{})
	h.Server("gpu1", "H100", 8, nil)
	h.Wallet("dave", "100")
	ctx := context.Background()
	tm := job(1, "0.01")
	count := func() [3]int64 { return [3]int64{locks.Load(), withFunds.Load(), balances.Load()} }

	reply, err := h.House.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r1", Terms: tm})
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, [3]int64{1, 0, 1}, count(), "the first offer: the lock, then the funds (the owners unknown before)")

	reply, err = h.House.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r2", Terms: tm})
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, [3]int64{1, 1, 1}, count(), "the second: the lock and the funds together")

	// dave's funds go to eve's wallet: the same offer again is one he
	// cannot pay.
	dave, eve := currency.WalletID(housetest.Currency, "dave"), h.Wallet("eve", "0")
	bal, err := h.Ledger.Balance(ctx, dave)
	require.NoError(t, err)
	_, err = currency.Do(ctx, h.Ledger, currency.Transfer{Key: "drain", From: dave, To: eve, Amount: bal.Available})
	require.NoError(t, err)
	asked := h.Router.AskedOf("gpu1")
	_, err = h.House.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r3", Terms: tm})
	assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "%v", err)
	assert.Equal(t, asked, h.Router.AskedOf("gpu1"), "refused before any server was asked")
	assert.Equal(t, [3]int64{1, 2, 1}, count())
}
