package exchange_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/sqlledger"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/exchange/sqlstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// TestRetryAfterSettlement: an offer tried again with its request id
// answers the contract as it stands now, whichever instance the try
// reaches and whatever tries came before. A retry while the contract
// runs (its server full, so that the retry's negotiation makes nothing)
// answered the running contract, and that answer was kept for the
// minute an answer without a new contract stands; a retry after the
// settlement, within that minute, was told the contract still ran and
// had cost nothing, while the client's wallet had paid. On memory and
// on PostgreSQL, with two instances.
func TestRetryAfterSettlement(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, sql bool) {
		// On PostgreSQL the database's clock times the minute an answer
		// stands: the test stays within it there.
		testRetryAfterSettlement(t, h, !sql)
	})
}

// onStores runs test on a harness on the memory store, then on one on
// PostgreSQL (skipped without one, but in CI), each with cfg.
func onStores(t *testing.T, cfg exchange.Config, test func(t *testing.T, h *housetest.Harness, sql bool)) {
	t.Run("Memory", func(t *testing.T) { test(t, housetest.New(t, cfg), false) })
	t.Run("PostgreSQL", func(t *testing.T) { test(t, onPostgres(t, cfg), true) })
}

// onPostgres is a harness with cfg on a fresh PostgreSQL database
// (skipped without one, but in CI), its ledger on the harness's clock.
func onPostgres(t *testing.T, cfg exchange.Config) *housetest.Harness {
	url := pgtest.FreshDB(t)
	return housetest.NewWith(t, func(now func() time.Time) exchange.Store {
		l, err := sqlledger.Open(context.Background(), url, sqlledger.Options{Now: now})
		require.NoError(t, err)
		t.Cleanup(l.Close)
		s, err := sqlstore.Open(context.Background(), l)
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s
	}, cfg)
}

func testRetryAfterSettlement(t *testing.T, h *housetest.Harness, afterTheMinute bool) {
	ctx := context.Background()
	h.Server("gpu1", "H100", 1, nil)
	h.Wallet("dave", "100")
	a, b := h.House, h.Instance()
	h.Beat(b)
	tm := job(1, "0.01")
	try := func(house *exchange.House, what string) protocol.ContractView {
		t.Helper()
		reply, err := house.Offer(ctx, "dave", protocol.OfferRequest{RequestID: "r1", Terms: tm})
		require.NoError(t, err, what)
		require.NotNil(t, reply.Contract, "%s: %+v", what, reply)
		return *reply.Contract
	}

	first := try(a, "the first try")
	h.Run(10*time.Second, time.Second)
	h.Beat(b)
	for _, house := range []*exchange.House{a, b} {
		running := try(house, "a retry while it runs")
		assert.Equal(t, first.ID, running.ID)
		assert.Equal(t, contract.StateRunning, running.State, "a retry while it runs")
	}

	h.Run(time.Minute, time.Second)
	stored, err := h.Store.Contract(ctx, first.ID)
	require.NoError(t, err)
	require.Equal(t, contract.StateSettled, stored.State)
	require.True(t, stored.Charge.IsPositive())
	same := func(what string) {
		t.Helper()
		h.Beat(b)
		for i, house := range []*exchange.House{a, b} {
			got := try(house, what)
			assert.Equal(t, first.ID, got.ID, "%s, instance %d", what, i)
			assert.Equal(t, contract.StateSettled, got.State, "%s, instance %d: the contract as it stands now", what, i)
			assert.Equal(t, stored.Reason, got.Reason, "%s, instance %d", what, i)
			assert.True(t, got.Charge.Equal(stored.Charge), "%s, instance %d: charged %s, told %s", what, i, stored.Charge, got.Charge)
			assert.True(t, got.Refund.Equal(stored.Refund), "%s, instance %d", what, i)
		}
	}
	same("a retry after the settlement, within the minute")
	if afterTheMinute {
		h.Advance(2 * time.Minute)
		same("a retry after the minute")
	}
	h.Audit()
}

// TestRetryWhileTheFirstTryNegotiates drives the interleaving of issue
// 26: a client's offer is slow to be accepted (its server decides at
// once, claiming its one GPU, but its answer is slow to come back), so
// the client gives up and retries with the same request id, which
// reaches an exchange instance (the same one, or another) while the
// first try still negotiates. The retry must answer the contract the
// first try makes, never "no contract" (the server, its GPU claimed,
// refuses any other negotiation); the client is charged only for what
// it was told of. On memory and PostgreSQL, with one instance and with
// two.
func TestRetryWhileTheFirstTryNegotiates(t *testing.T) {
	for _, instances := range []int{1, 2} {
		t.Run(fmt.Sprint(instances, "Instances"), func(t *testing.T) {
			onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
				testRetryWhileTheFirstTryNegotiates(t, h, instances)
			})
		})
	}
}

func testRetryWhileTheFirstTryNegotiates(t *testing.T, h *housetest.Harness, instances int) {
	ctx := context.Background()
	h.Server("gpu1", "H100", 1, nil)
	wallet := h.Wallet("alice", "1000")
	first, retry := h.House, h.House
	if instances == 2 {
		retry = h.Instance()
		h.Beat(retry)
	}
	req := protocol.OfferRequest{RequestID: "train", Terms: job(1, "0.01")}
	type answer struct {
		reply protocol.OfferReply
		err   error
	}
	firstDone := make(chan answer, 1)
	asked, release := h.Router.Stall("gpu1")
	go func() {
		reply, err := first.Offer(ctx, "alice", req)
		firstDone <- answer{reply, err}
	}()
	<-asked // the first try negotiates: gpu1 has claimed its GPU for it, its accept is on its way

	// The accept reaches the first try while the retry waits for it.
	var firstAnswer *answer
	h.WhileWaiting(func() {
		release()
		a := <-firstDone
		firstAnswer = &a
	})
	reply, err := retry.Offer(ctx, "alice", req)
	waited := firstAnswer != nil
	release() // if the retry never waited
	if !waited {
		a := <-firstDone
		firstAnswer = &a
	}
	assert.True(t, waited, "the retry waited for the first try")
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "the retry answers the first try's contract, not %+v", reply)
	require.NoError(t, firstAnswer.err)
	require.NotNil(t, firstAnswer.reply.Contract, "%+v", firstAnswer.reply)
	assert.Equal(t, firstAnswer.reply.Contract.ID, reply.Contract.ID)
	c, err := h.Store.Contract(ctx, reply.Contract.ID)
	require.NoError(t, err)
	assert.True(t, c.HoldsEscrow(), "the contract the client was told of is the one escrowed: %s", c.State)
	assert.True(t, h.Balance(wallet).Held.Equal(req.Terms.Prepayment), "escrowed once: %+v", h.Balance(wallet))
	h.Audit()
}

// closable is server.Posted{} until closed: then it refuses every
// offer, as a server whose GPUs are all taken would.
type closable struct{ closed atomic.Bool }

func (p *closable) Decide(t contract.Terms, v server.View) server.Decision {
	if p.closed.Load() {
		return server.Decision{Reason: "full"}
	}
	return server.Posted{}.Decide(t, v)
}

// TestRetryAnswersFirstContract: a retried offer (the same request id)
// answers with the first try's contract, escrowed once, whatever has
// changed since: the client can no longer pay for a second, can again,
// or no server would accept now. On memory and PostgreSQL.
func TestRetryAnswersFirstContract(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		policy := &closable{}
		h.Server("gpu1", "H100", 8, policy)
		tm := job(1, "0.01")
		w := h.Wallet("alice", tm.Prepayment.String()) // one prepayment
		first := offer(t, h, "alice", "r1", tm, 0)
		require.NotNil(t, first.Contract, "%+v", first)
		same := func(what string) {
			t.Helper()
			r := offer(t, h, "alice", "r1", tm, 0)
			require.NotNil(t, r.Contract, "%s: %+v", what, r)
			assert.Equal(t, first.Contract.ID, r.Contract.ID, what)
		}

		same("retry with the wallet empty")
		assert.True(t, h.Balance(w).Held.Equal(tm.Prepayment), "escrowed once")

		_, err := currency.Do(ctx, h.Ledger, currency.Transfer{Key: "more", From: currency.IssuanceID(housetest.Currency), To: w, Amount: dectest.D("100")})
		require.NoError(t, err)
		same("retry that could pay for another")
		assert.True(t, h.Balance(w).Held.Equal(tm.Prepayment), "still escrowed once")

		policy.closed.Store(true)
		same("retry that no server accepts")
		assert.True(t, h.Balance(w).Available.Equal(dectest.D("100")), "%+v", h.Balance(w))
		h.Audit()
	})
}
