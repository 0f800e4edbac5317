package natsvc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/trade"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// capGPUs gives client a concurrent-GPU cap of n, as bourse admin cap does.
func (m *market) capGPUs(client string, n int) {
	m.t.Helper()
	_, err := m.setCap(client, n, "cap-set/"+client)
	require.NoError(m.t, err)
}

// setCap sets client's cap through the treasury beside the market's ledger.
func (m *market) setCap(client string, n int, key string) (treasury.Action, error) {
	m.t.Helper()
	tr, err := sqltreasury.Beside(context.Background(), m.ledger)
	require.NoError(m.t, err)
	return tr.SetCap(context.Background(), "ops", client, n, key)
}

// TestCapUnderConcurrency: 32 offers at once from a client capped at 4
// GPUs make exactly 4 contracts; the others get cap_exceeded, nothing of
// theirs escrowed; two contracts ending free two GPUs, and two more
// offers go through. The audit balances throughout, on both stores.
func TestCapUnderConcurrency(t *testing.T) {
	onStores(t, func(t *testing.T, store exchange.Store) {
		m := newMarketOn(t, store, honest)
		m.wallet("alice", "1000")
		m.capGPUs("alice", 4)
		srv := m.scriptedServer("gpu1", 64, accept)
		alice := m.client("alice")

		var mu sync.Mutex
		var made []trade.Contract
		capped, other := 0, []error{}
		var wg sync.WaitGroup
		for i := range 32 {
			wg.Go(func() {
				r, err := alice.Offer(context.Background(), fmt.Sprint("burst-", i), terms("alice"))
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil && r.Contract != nil:
					made = append(made, *r.Contract)
				case bourse.ErrorCode(err) == bourse.ECapExceeded:
					capped++
				default:
					other = append(other, fmt.Errorf("%v %+v", err, r))
				}
			})
		}
		wg.Wait()
		require.Empty(t, other)
		require.Len(t, made, 4, "the cap")
		assert.Equal(t, 28, capped)
		bal := m.balance(currency.WalletID(cred, "alice"))
		assert.True(t, bal.Held.Equal(d("24")), "four prepayments of 6 held, no more: %s", bal.Held)
		capBal := m.balance(exchange.CapWallet("alice"))
		assert.True(t, capBal.Held.Equal(d("4")) && capBal.Available.IsZero(), "%+v", capBal)
		m.audit()

		_, err := alice.Offer(context.Background(), "one-more", terms("alice"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "4 of 4 GPUs in use")
		_, err = m.setCap("alice", 2, "cap-lower")
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "GPUs in use cannot be taken back: %v", err)

		for _, c := range made[:2] {
			waitFor(t, "the start", func() bool { return m.contract(c.ID).State == trade.StateRunning })
			srv.publish(reading(c.ID, 1, "0.5", 1, true))
			m.settled(c.ID, 5*time.Second)
		}
		capBal = m.balance(exchange.CapWallet("alice"))
		assert.True(t, capBal.Held.Equal(d("2")) && capBal.Available.Equal(d("2")), "two GPUs back: %+v", capBal)
		for i := range 2 {
			r, err := alice.Offer(context.Background(), fmt.Sprint("after-", i), terms("alice"))
			require.NoError(t, err)
			require.NotNil(t, r.Contract)
		}
		_, err = alice.Offer(context.Background(), "past-again", terms("alice"))
		assert.Equal(t, bourse.ECapExceeded, bourse.ErrorCode(err))
		m.audit()
	})
}

// TestNoCap: a client without a cap wallet is not capped.
func TestNoCap(t *testing.T) {
	m := newMarket(t, honest)
	m.wallet("bob", "1000")
	m.scriptedServer("gpu1", 64, accept)
	bob := m.client("bob")
	for i := range 6 {
		r, err := bob.Offer(context.Background(), fmt.Sprint("free-", i), terms("bob"))
		require.NoError(t, err)
		require.NotNil(t, r.Contract)
		assert.Empty(t, r.Contract.CapHold)
	}
}

// TestCapHoldExpiredFirst: if the watchdog expired a contract's cap hold
// before the contract settled (stuck past both deadlines), the settlement
// still goes through, and the GPUs are back either way.
func TestCapHoldExpiredFirst(t *testing.T) {
	m := newMarket(t, honest)
	m.wallet("alice", "100")
	m.capGPUs("alice", 2)
	srv := m.scriptedServer("gpu1", 4, accept)
	c := m.running(m.client("alice"), terms("alice"))
	require.NotEmpty(t, c.CapHold)
	_, err := currency.Do(context.Background(), m.ledger, currency.Expire{Key: "expire/" + c.CapHold, Hold: currency.HoldID(c.CapHold)})
	require.Error(t, err, "not due yet: the ledger refuses")
	_, err = currency.Do(context.Background(), m.ledger, currency.Void{Key: "watchdog/" + c.CapHold, Hold: currency.HoldID(c.CapHold)})
	require.NoError(t, err) // as if it had expired
	srv.publish(reading(c.ID, 1, "0.5", 1, true))
	settled := m.settled(c.ID, 5*time.Second)
	assert.Equal(t, trade.StateSettled, settled.State)
	capBal := m.balance(exchange.CapWallet("alice"))
	assert.True(t, capBal.Available.Equal(d("2")) && capBal.Held.IsZero(), "%+v", capBal)
	m.audit()
}
