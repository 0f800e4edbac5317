package housetest

import (
	"context"
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
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// BookRace runs the book on store (empty, its ledger too) with two
// exchange instances matching at once while clients cancel, and one
// instance restarted midway: every waiting offer ends exactly one way (a
// contract made once, or out of the book once), its client hears of it
// once, and the ledger's audit holds, each client's money all there. The
// memory and SQL stores' tests run it.
func BookRace(t *testing.T, store exchange.Store) {
	// Readings every 10 s: the test is of the book, and each costs a
	// database transaction.
	h := NewOn(t, store, exchange.Config{ReadingEvery: 10 * time.Second, ServerLostAfter: 30 * time.Second})
	ctx := context.Background()
	for _, id := range []string{"gpu1", "gpu2"} {
		h.Server(id, "H100", 4, server.Posted{P: contract.Flat(decimal.RequireFromString("0.01"))})
	}
	terms := func(gpus int, price string) contract.Terms {
		t := contract.Terms{Currency: Currency, GPUs: gpus, TimeLimit: 2 * time.Minute, P: contract.Flat(decimal.RequireFromString(price)),
			Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: decimal.NewFromInt(1), Duration: 30 * time.Second}}}
		t.Prepayment = t.CappedPrepayment(2)
		return t
	}
	h.Wallet("alice", "100")
	for i := range 2 {
		reply, err := h.House.Offer(ctx, "alice", protocol.OfferRequest{RequestID: fmt.Sprint("busy", i), Terms: terms(4, "0.01")})
		require.NoError(t, err)
		require.NotNil(t, reply.Contract, "the servers are busy")
	}
	const n = 12
	ids := map[string]string{} // client → its waiting offer
	for i := range n {
		client := fmt.Sprint("w", i)
		h.Wallet(client, "10")
		reply, err := h.House.Offer(ctx, client, protocol.OfferRequest{RequestID: "job", Terms: terms(1+i%2, fmt.Sprintf("0.0%d", 1+i%4)),
			Wait: contract.Duration(time.Hour)})
		require.NoError(t, err)
		require.NotNil(t, reply.Queued, "%s: %+v", client, reply)
		ids[client] = reply.Queued.ID
	}
	other := h.Instance()
	h.Beat(other)

	var mu sync.Mutex // guards cancelled
	cancelled := map[string]bool{}
	for step := range 130 {
		h.Advance(time.Second)
		h.Tick()
		h.Beat(other)
		if step == 40 {
			h.House = h.Instance() // a restart: it knows the servers from their next heartbeats
			h.Beat(other)
		}
		var wg sync.WaitGroup
		for _, house := range []*exchange.House{h.House, other} {
			wg.Go(func() {
				house.Sweep(ctx)
				house.Match(ctx)
			})
		}
		if step == 31 { // as the first jobs end: cancels race the matches
			for i := 0; i < n; i += 4 {
				client := fmt.Sprint("w", i)
				wg.Go(func() {
					_, err := other.Cancel(ctx, client, ids[client])
					if err == nil {
						mu.Lock()
						cancelled[client] = true
						mu.Unlock()
					} else if bourse.ErrorCode(err) != bourse.ENotFound {
						t.Errorf("cancel %s: %v", client, err)
					}
				})
			}
		}
		wg.Wait()
	}
	book, err := h.Store.Book(ctx, exchange.BookQuery{})
	require.NoError(t, err)
	assert.Empty(t, book, "every waiting offer matched or cancelled")
	for client, id := range ids {
		accepted, left := 0, 0
		for _, e := range h.Events(client) {
			switch {
			case e.Type == protocol.EventAccepted && e.Contract.ID == id:
				accepted++
			case e.Type == protocol.EventLeftBook:
				left++
				assert.Equal(t, contract.LeftCancelled, e.Waiting.Left, client)
			}
		}
		cs, err := h.House.Contracts(ctx, client, 10)
		require.NoError(t, err)
		if cancelled[client] {
			assert.Equal(t, [2]int{0, 1}, [2]int{accepted, left}, "%s cancelled: one left_book, no contract", client)
			assert.Empty(t, cs, client)
		} else {
			assert.Equal(t, [2]int{1, 0}, [2]int{accepted, left}, "%s matched once", client)
			require.Len(t, cs, 1, client)
			assert.Equal(t, id, cs[0].ID)
			assert.Equal(t, contract.StateSettled, cs[0].State, client)
		}
		// Its money is all there: what it was charged went to the servers.
		b := h.Balance(currency.WalletID(Currency, client))
		charged := decimal.Zero
		for _, c := range cs {
			charged = charged.Add(c.Charge)
		}
		assert.True(t, b.Held.IsZero() && b.Available.Add(charged).Equal(decimal.NewFromInt(10)), "%s: %+v charged %s", client, b, charged)
	}
	h.Audit()
}
