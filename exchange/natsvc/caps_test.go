package natsvc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/protocol"
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
	tr, err := sqltreasury.Beside(context.Background(), m.ledger, nil)
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
		var made []protocol.ContractView
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
		assert.True(t, bal.Held.Equal(dectest.D("24")), "four prepayments of 6 held, no more: %s", bal.Held)
		capBal := m.balance(caps.GPUWallet("alice"))
		assert.True(t, capBal.Held.Equal(dectest.D("4")) && capBal.Available.IsZero(), "%+v", capBal)
		m.audit()

		_, err := alice.Offer(context.Background(), "one-more", terms("alice"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "4 of 4 GPUs in use")
		_, err = m.setCap("alice", 2, "cap-lower")
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "GPUs in use cannot be taken back: %v", err)

		for _, c := range made[:2] {
			waitFor(t, "the start", func() bool { return m.contract(c.ID).State == contract.StateRunning })
			srv.publish(reading(c.ID, 1, "0.5", 1, true))
			m.settled(c.ID, 5*time.Second)
		}
		capBal = m.balance(caps.GPUWallet("alice"))
		assert.True(t, capBal.Held.Equal(dectest.D("2")) && capBal.Available.Equal(dectest.D("2")), "two GPUs back: %+v", capBal)
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
		assert.Empty(t, m.contract(r.Contract.ID).CapHolds)
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
	require.Equal(t, []string{"gpus/" + c.ID}, c.CapHolds, "the client's own cap's hold")
	own := c.CapHolds[0]
	_, err := currency.Do(context.Background(), m.ledger, currency.Expire{Key: "expire/" + own, Hold: currency.HoldID(own)})
	require.Error(t, err, "not due yet: the ledger refuses")
	_, err = currency.Do(context.Background(), m.ledger, currency.Void{Key: "watchdog/" + own, Hold: currency.HoldID(own)})
	require.NoError(t, err) // as if it had expired
	srv.publish(reading(c.ID, 1, "0.5", 1, true))
	settled := m.settled(c.ID, 5*time.Second)
	assert.Equal(t, contract.StateSettled, settled.State)
	capBal := m.balance(caps.GPUWallet("alice"))
	assert.True(t, capBal.Available.Equal(dectest.D("2")) && capBal.Held.IsZero(), "%+v", capBal)
	m.audit()
}

// TestCapHoldsOfAnOldRecord: a contract whose record was written before a
// contract's cap holds were one list (its client's own hold in cap_hold,
// its organisation's in cap_holds) reads back with both, its client's
// first, and settles on PostgreSQL releasing both under the keys that
// version's settlement used: cap-release/<contract> and
// cap-release/<contract>/<owner>.
func TestCapHoldsOfAnOldRecord(t *testing.T) {
	ctx := context.Background()
	l, err := sqlledger.Open(ctx, pgtest.FreshDB(t), sqlledger.Options{})
	require.NoError(t, err)
	t.Cleanup(l.Close)
	store, err := sqlstore.Open(ctx, l)
	require.NoError(t, err)
	t.Cleanup(store.Close)
	m := newMarketOn(t, store, func(c *exchange.Config) { honest(c); c.ServerLostAfter = time.Minute })
	tr, err := sqltreasury.Beside(ctx, l, nil)
	require.NoError(t, err)
	for _, a := range []struct{ owner, parent string }{{"acme", ""}, {"alice", "acme"}} {
		_, err := tr.Open(ctx, "root", cred, a.owner, a.parent, "open-"+a.owner)
		require.NoError(t, err)
	}
	_, err = tr.Grant(ctx, "root", cred, "alice", dectest.D("100"), "grant-alice", "")
	require.NoError(t, err)
	for owner, n := range map[string]int{"alice": 2, "acme": 4} {
		_, err = tr.SetCap(ctx, "root", owner, n, "cap-"+owner)
		require.NoError(t, err)
	}
	srv := m.scriptedServer("gpu1", 4, accept)
	c := m.running(m.client("alice"), terms("alice"))
	own, org := "gpus/"+c.ID, "gpus/"+c.ID+"/acme"
	require.Equal(t, []string{own, org}, c.CapHolds)

	// The record as the earlier version wrote it.
	var rec string
	b := &pgx.Batch{}
	b.Queue(`SELECT record FROM contracts WHERE id = $1`, c.ID).QueryRow(func(r pgx.Row) error { return r.Scan(&rec) })
	require.NoError(t, l.Send(ctx, b))
	var fields map[string]any
	require.NoError(t, json.Unmarshal([]byte(rec), &fields))
	fields["cap_hold"], fields["cap_holds"] = own, []string{org}
	old, err := json.Marshal(fields)
	require.NoError(t, err)
	b = &pgx.Batch{}
	b.Queue(`UPDATE contracts SET record = $1 WHERE id = $2`, string(old), c.ID)
	require.NoError(t, l.Send(ctx, b))
	read, err := store.Contract(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{own, org}, read.CapHolds, "the client's own hold first")

	srv.publish(reading(c.ID, 1, "0.5", 1, true))
	assert.Equal(t, contract.StateSettled, m.settled(c.ID, 5*time.Second).State)
	for owner, n := range map[string]string{"alice": "2", "acme": "4"} {
		bal := m.balance(caps.GPUWallet(owner))
		assert.True(t, bal.Held.IsZero() && bal.Available.Equal(dectest.D(n)), "%s's GPUs back: %+v", owner, bal)
	}
	released := map[string]bool{}
	for _, owner := range []string{"alice", "acme"} {
		entries, err := l.Statement(ctx, caps.GPUWallet(owner), 0, 100)
		require.NoError(t, err)
		for _, e := range entries {
			released[e.Key] = true
		}
	}
	assert.True(t, released["cap-release/"+c.ID], "the client's own cap, under its key: %v", released)
	assert.True(t, released["cap-release/"+c.ID+"/acme"], "the organisation's, under its key: %v", released)
	m.audit()
}
