package exchange_test

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
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/treasury"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// The caps' rules at an offer and at the settlement, on a manual clock,
// with offers at once from many goroutines.

// setCap sets client's concurrent-GPU cap of n under key, through the
// treasury beside the harness's ledger, as bourse admin cap does.
func setCap(t *testing.T, h *housetest.Harness, client string, n int, key string) (treasury.Action, error) {
	t.Helper()
	tr, err := sqltreasury.Beside(context.Background(), h.Ledger, nil)
	require.NoError(t, err)
	return tr.SetCap(context.Background(), "ops", client, n, key)
}

// burst sends n offers of tm from client at once, request ids tag-0 to
// tag-n-1, and sorts the answers: contracts and cap_exceeded refusals;
// any other answer fails the test.
func burst(t *testing.T, h *housetest.Harness, client, tag string, n int, tm contract.Terms) (made []protocol.ContractView, capped []error) {
	t.Helper()
	var mu sync.Mutex
	var other []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := h.House.Offer(context.Background(), client, protocol.OfferRequest{RequestID: fmt.Sprintf("%s-%d", tag, i), Terms: tm})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && r.Contract != nil:
				made = append(made, *r.Contract)
			case bourse.ErrorCode(err) == bourse.ECapExceeded:
				capped = append(capped, err)
			default:
				other = append(other, fmt.Errorf("%v %+v", err, r))
			}
		})
	}
	wg.Wait()
	require.Empty(t, other)
	return made, capped
}

// finish has contract id's server send its final reading, a GPU busy
// for a second, which settles it.
func finish(t *testing.T, h *housetest.Harness, id string) contract.Contract {
	t.Helper()
	c, err := h.Store.Contract(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, contract.StateRunning, c.State)
	final := contract.Reading{Contract: id, Seq: 1, U: dectest.D("1"), T: contract.Duration(time.Second), S: dectest.D("1"),
		At: h.Now(), Final: true, Reason: contract.ReasonCompleted}
	require.NoError(t, h.House.Count(context.Background(), c.Server, final))
	c, err = h.Store.Contract(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, contract.StateSettled, c.State)
	return c
}

// TestCapUnderConcurrency: 32 offers at once from a client capped at 4
// GPUs make exactly 4 contracts; the others get cap_exceeded, nothing of
// theirs escrowed; two contracts ending free two GPUs, and two more
// offers go through. The audit balances throughout, on both stores.
func TestCapUnderConcurrency(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		wallet := h.Wallet("alice", "1000")
		_, err := setCap(t, h, "alice", 4, "cap-set/alice")
		require.NoError(t, err)
		h.Server("gpu1", "H100", 64, nil)
		tm := job(1, "0.01")

		made, capped := burst(t, h, "alice", "burst", 32, tm)
		require.Len(t, made, 4, "the cap")
		assert.Len(t, capped, 28)
		bal := h.Balance(wallet)
		assert.True(t, bal.Held.Equal(tm.Prepayment.Mul(dectest.D("4"))), "four prepayments held, no more: %s", bal.Held)
		capBal := h.Balance(caps.GPUWallet("alice"))
		assert.True(t, capBal.Held.Equal(dectest.D("4")) && capBal.Available.IsZero(), "%+v", capBal)
		h.Audit()

		_, err = h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "one-more", Terms: tm})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "4 of 4 GPUs in use")
		_, err = setCap(t, h, "alice", 2, "cap-lower")
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "GPUs in use cannot be taken back: %v", err)

		for _, c := range made[:2] {
			finish(t, h, c.ID)
		}
		capBal = h.Balance(caps.GPUWallet("alice"))
		assert.True(t, capBal.Held.Equal(dectest.D("2")) && capBal.Available.Equal(dectest.D("2")), "two GPUs back: %+v", capBal)
		for i := range 2 {
			require.NotNil(t, offer(t, h, "alice", fmt.Sprint("after-", i), tm, 0).Contract)
		}
		_, err = h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: "past-again", Terms: tm})
		assert.Equal(t, bourse.ECapExceeded, bourse.ErrorCode(err))
		h.Audit()
	})
}

// TestNoCap: a client without a cap wallet is not capped.
func TestNoCap(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Wallet("bob", "1000")
	h.Server("gpu1", "H100", 64, nil)
	for i := range 6 {
		r := offer(t, h, "bob", fmt.Sprint("free-", i), job(1, "0.01"), 0)
		require.NotNil(t, r.Contract)
		assert.Empty(t, contractOf(t, h, "bob", r.Contract.ID).CapHolds)
	}
}

// TestCapHoldExpiredFirst: if the sweep expired a contract's cap hold
// before the contract settled (stuck past both deadlines), the
// settlement still goes through, and the GPUs are back either way.
func TestCapHoldExpiredFirst(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Wallet("alice", "100")
	_, err := setCap(t, h, "alice", 2, "cap-set/alice")
	require.NoError(t, err)
	h.Server("gpu1", "H100", 4, nil)
	r := offer(t, h, "alice", "r1", job(1, "0.01"), 0)
	require.NotNil(t, r.Contract)
	c := contractOf(t, h, "alice", r.Contract.ID)
	require.Equal(t, []string{"gpus/" + c.ID}, c.CapHolds, "the client's own cap's hold")
	own := c.CapHolds[0]
	_, err = currency.Do(context.Background(), h.Ledger, currency.Expire{Key: "expire/" + own, Hold: currency.HoldID(own)})
	require.Error(t, err, "not due yet: the ledger refuses")
	_, err = currency.Do(context.Background(), h.Ledger, currency.Void{Key: "void/" + own, Hold: currency.HoldID(own)})
	require.NoError(t, err) // as if it had expired
	finish(t, h, c.ID)
	capBal := h.Balance(caps.GPUWallet("alice"))
	assert.True(t, capBal.Available.Equal(dectest.D("2")) && capBal.Held.IsZero(), "%+v", capBal)
	h.Audit()
}

// TestCapHoldsOfAnOldRecord: a contract whose record was written before a
// contract's cap holds were one list (its client's own hold in cap_hold,
// its organisation's in cap_holds) reads back with both, its client's
// first, and settles on PostgreSQL releasing both under the keys that
// version's settlement used: cap-release/<contract> and
// cap-release/<contract>/<owner>.
func TestCapHoldsOfAnOldRecord(t *testing.T) {
	ctx := context.Background()
	h := onPostgres(t, exchange.Config{})
	l := h.Ledger.(*sqlledger.Ledger)
	tr, err := sqltreasury.Beside(ctx, l, nil)
	require.NoError(t, err)
	for _, a := range []struct{ owner, parent string }{{"acme", ""}, {"alice", "acme"}} {
		_, err := tr.Open(ctx, "root", housetest.Currency, a.owner, a.parent, "open-"+a.owner)
		require.NoError(t, err)
	}
	_, err = tr.Grant(ctx, "root", housetest.Currency, "alice", dectest.D("100"), "grant-alice", "")
	require.NoError(t, err)
	for owner, n := range map[string]int{"alice": 2, "acme": 4} {
		_, err = tr.SetCap(ctx, "root", owner, n, "cap-"+owner)
		require.NoError(t, err)
	}
	h.Server("gpu1", "H100", 4, nil)
	r := offer(t, h, "alice", "r1", job(1, "0.01"), 0)
	require.NotNil(t, r.Contract)
	c := contractOf(t, h, "alice", r.Contract.ID)
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
	read, err := h.Store.Contract(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{own, org}, read.CapHolds, "the client's own hold first")

	finish(t, h, c.ID)
	for owner, n := range map[string]string{"alice": "2", "acme": "4"} {
		bal := h.Balance(caps.GPUWallet(owner))
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
	h.Audit()
}
