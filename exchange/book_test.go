package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/treasury/sqltreasury"
)

// job is terms for gpus H100s at price a GPU-second, a minute's job.
func job(gpus int, price string) contract.Terms {
	t := contract.Terms{Currency: housetest.Currency, GPUs: gpus, Class: contract.Class{Model: "H100"}, TimeLimit: 2 * time.Minute,
		P: contract.Flat(dectest.D(price)), Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Minute}}}
	t.Prepayment = t.CappedPrepayment(2)
	return t
}

// offer makes client's offer of t under request id, waiting up to wait.
func offer(t *testing.T, h *housetest.Harness, client, id string, tm contract.Terms, wait time.Duration) protocol.OfferReply {
	t.Helper()
	reply, err := h.House.Offer(context.Background(), client, protocol.OfferRequest{RequestID: id, Terms: tm, Wait: contract.Duration(wait)})
	require.NoError(t, err, "offer %s", id)
	return reply
}

// eventsOf returns the types of client's events since the last call.
func eventsOf(h *housetest.Harness, client string) []protocol.EventType {
	var out []protocol.EventType
	for _, e := range h.Events(client) {
		out = append(out, e.Type)
	}
	return out
}

// TestBookMatchesWhenGPUsFree: offers no server can take now wait in the
// book and say where they stand; when the running contract ends and its
// server's heartbeat shows the GPUs free, the best-priced waiting offer
// becomes a contract, then the next. Nothing is held for an offer while
// it waits.
func TestBookMatchesWhenGPUsFree(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	for _, c := range []string{"alice", "bob", "carol"} {
		h.Wallet(c, "100")
	}
	first := offer(t, h, "alice", "a1", job(2, "0.01"), 0)
	require.NotNil(t, first.Contract)

	bob := offer(t, h, "bob", "b1", job(2, "0.01"), time.Hour)
	require.Nil(t, bob.Contract)
	require.NotNil(t, bob.Queued, "%+v", bob)
	assert.Equal(t, 0, bob.Queued.Ahead)
	assert.True(t, bob.Queued.Until.Equal(h.Now().Add(time.Hour)))
	require.Len(t, bob.Rejections, 1, "gpu1's answer before it was queued")
	h.Advance(time.Second)
	carol := offer(t, h, "carol", "c1", job(2, "0.02"), time.Hour)
	require.NotNil(t, carol.Queued)
	assert.Equal(t, 0, carol.Queued.Ahead, "carol pays more: she goes first")
	w, err := h.Store.Waiting(context.Background(), bob.Queued.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, w.Ahead, "bob is behind carol now")

	t.Run("NothingHeld", func(t *testing.T) {
		b, err := h.House.Balance(context.Background(), "bob", housetest.Currency)
		require.NoError(t, err)
		assert.True(t, b.Held.IsZero() && b.Available.Equal(dectest.D("100")), "%+v", b.Balance)
		require.NotNil(t, b.Waiting)
		assert.Equal(t, 1, b.Waiting.Offers)
		assert.True(t, b.Waiting.Prepayments.Equal(job(2, "0.01").Prepayment), "%s", b.Waiting.Prepayments)
	})
	t.Run("RetrySameAnswer", func(t *testing.T) {
		again := offer(t, h, "bob", "b1", job(2, "0.01"), time.Hour)
		require.NotNil(t, again.Queued)
		assert.Equal(t, bob.Queued.ID, again.Queued.ID, "one waiting offer per request id")
		assert.Equal(t, 1, again.Queued.Ahead)
	})

	h.Run(90*time.Second, time.Second)
	cs, err := h.House.Contracts(context.Background(), "carol", 10)
	require.NoError(t, err)
	require.Len(t, cs, 1, "carol matched when alice's job ended")
	assert.Equal(t, carol.Queued.ID, cs[0].ID, "the contract her request names")
	assert.False(t, cs[0].QueuedAt.IsZero())
	assert.Contains(t, eventsOf(h, "carol"), protocol.EventAccepted)
	bobs, err := h.House.WaitingOffers(context.Background(), "bob", "")
	require.NoError(t, err)
	require.Len(t, bobs, 1, "bob waits on")
	assert.Equal(t, 0, bobs[0].Ahead)

	h.Run(90*time.Second, time.Second)
	cs, err = h.House.Contracts(context.Background(), "bob", 10)
	require.NoError(t, err)
	require.Len(t, cs, 1, "then bob")
	assert.Equal(t, contract.StateSettled, cs[0].State)
	b, err := h.House.Balance(context.Background(), "bob", housetest.Currency)
	require.NoError(t, err)
	assert.Nil(t, b.Waiting, "nothing waits")
	h.Audit()
}

// TestBookLeaves: cancel, expiry, and a match the wallet cannot pay each
// take an offer out of the book once, with an event that says why, and
// no money moves.
func TestBookLeaves(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	wallet := h.Wallet("bob", "100")
	h.Wallet("alice", "100")
	ctx := context.Background()
	require.NotNil(t, offer(t, h, "alice", "busy", job(1, "0.01"), 0).Contract)

	t.Run("Cancel", func(t *testing.T) {
		q := offer(t, h, "bob", "cancel-me", job(1, "0.01"), time.Hour)
		require.NotNil(t, q.Queued)
		_, err := h.House.Cancel(ctx, "alice", q.Queued.ID)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "not alice's")
		left, err := h.House.Cancel(ctx, "bob", q.Queued.ID)
		require.NoError(t, err)
		assert.Equal(t, contract.LeftCancelled, left.Left)
		_, err = h.House.Cancel(ctx, "bob", q.Queued.ID)
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "once")
		ev := h.Events("bob")
		require.Len(t, ev, 1)
		assert.Equal(t, protocol.EventLeftBook, ev[0].Type)
		assert.Equal(t, contract.LeftCancelled, ev[0].Waiting.Left)
	})
	t.Run("Expire", func(t *testing.T) {
		q := offer(t, h, "bob", "expire-me", job(1, "0.01"), 10*time.Second)
		require.NotNil(t, q.Queued)
		h.Advance(9 * time.Second)
		h.House.Sweep(ctx)
		assert.Empty(t, h.Events("bob"))
		h.Advance(2 * time.Second)
		h.House.Sweep(ctx)
		ev := h.Events("bob")
		require.Len(t, ev, 1)
		assert.Equal(t, protocol.EventLeftBook, ev[0].Type)
		assert.Equal(t, contract.LeftExpired, ev[0].Waiting.Left)
		h.House.Sweep(ctx)
		assert.Empty(t, h.Events("bob"), "once")
	})
	t.Run("Unpaid", func(t *testing.T) {
		q := offer(t, h, "bob", "unpaid", job(1, "0.01"), time.Hour)
		require.NotNil(t, q.Queued)
		// bob spends his money elsewhere meanwhile.
		_, err := currency.Do(ctx, h.Ledger, currency.Transfer{Key: "spent", From: wallet, To: currency.IssuanceID(housetest.Currency), Amount: dectest.D("99")})
		require.NoError(t, err)
		h.Run(90*time.Second, time.Second) // alice's job ends: gpu1 frees up
		ev := h.Events("bob")
		require.Len(t, ev, 1, "%+v", ev)
		assert.Equal(t, protocol.EventLeftBook, ev[0].Type)
		assert.Equal(t, contract.LeftUnpaid, ev[0].Waiting.Left)
		assert.Regexp(t, `^prepayment \d+\.\d\d exceeds the available 1\.00 `+housetest.Currency+`$`, ev[0].Message, "money at the currency's places")
		b := h.Balance(wallet)
		assert.True(t, b.Available.Equal(dectest.D("1")) && b.Held.IsZero(), "%+v", b)
	})
	h.Audit()
}

// TestBookBounds: waits are bounded, a client's waiting offers and the
// book too, each refusal typed; a client's waiting offers must fit its
// balance together.
func TestBookBounds(t *testing.T) {
	h := housetest.New(t, exchange.Config{BookPerClient: 2, BookTotal: 3})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("1"))}) // rejects them all
	h.Wallet("bob", "100")
	h.Wallet("carol", "100")
	h.Wallet("dan", "100")
	ctx := context.Background()
	refuse := func(client, id string, tm contract.Terms, wait time.Duration, counter string) error {
		_, err := h.House.Offer(ctx, client, protocol.OfferRequest{RequestID: id, Terms: tm, Wait: contract.Duration(wait), Counter: counter})
		return err
	}
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(refuse("bob", "long", job(1, "0.01"), 8*24*time.Hour, "")))
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(refuse("bob", "neg", job(1, "0.01"), -time.Second, "")))
	taken := job(1, "0.01")
	taken.Server = "gpu1"
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(refuse("bob", "counter", taken, time.Hour, "k1")))

	big := job(1, "0.01")
	big.Prepayment = dectest.D("0.9")
	require.NotNil(t, offer(t, h, "bob", "b1", big, time.Hour).Queued)
	big.TimeLimit, big.Prepayment = time.Hour, dectest.D("36")
	require.NotNil(t, offer(t, h, "bob", "b2", big, time.Hour).Queued)
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(refuse("bob", "b3", job(1, "0.01"), time.Hour, "")), "bob's third")
	require.NotNil(t, offer(t, h, "carol", "c1", job(1, "0.01"), time.Hour).Queued)
	small := job(1, "0.01")
	small.Prepayment = dectest.D("0.6") // sure of 0.6/120 s a GPU-second, less than b1's 0.9/120 s
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(refuse("dan", "d1", small, time.Hour, "")), "the fourth in all, outbidding none")
	h.Events("bob")
	d2 := offer(t, h, "dan", "d2", job(1, "0.02"), time.Hour)
	require.NotNil(t, d2.Queued, "the fourth in all, sure to pay more than b1")
	assert.Equal(t, 0, d2.Queued.Ahead)
	ev := h.Events("bob")
	require.Len(t, ev, 1, "bob's b1 was the last: %+v", ev)
	assert.Equal(t, protocol.EventLeftBook, ev[0].Type)
	assert.Equal(t, contract.LeftOutbid, ev[0].Waiting.Left)
	bobs, err := h.House.WaitingOffers(ctx, "bob", "")
	require.NoError(t, err)
	require.Len(t, bobs, 1, "b2 waits on")
	assert.True(t, bobs[0].Terms.TimeLimit == time.Hour)

	// carol's waiting offers together may not pass her balance.
	h2 := housetest.New(t, exchange.Config{})
	h2.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("1"))})
	h2.Wallet("carol", "50")
	half := job(1, "0.01")
	half.TimeLimit, half.Prepayment = time.Hour, dectest.D("30")
	require.NotNil(t, offer(t, h2, "carol", "c1", half, time.Hour).Queued)
	_, err = h2.House.Offer(ctx, "carol", protocol.OfferRequest{RequestID: "c2", Terms: half, Wait: contract.Duration(time.Hour)})
	assert.Equal(t, bourse.EInsufficientFunds, bourse.ErrorCode(err), "30 + 30 > 50: %v", err)
}

// TestBookRace: two instances matching at once, cancels racing them and a
// restart, on the memory store (exchange/sqlstore runs it on PostgreSQL).
func TestBookRace(t *testing.T) {
	housetest.BookRace(t, memstore.New(mem.New(mem.Options{})))
}

// TestBookCapped: a waiting offer that its client's concurrent-GPU cap
// refuses when GPUs free up leaves the book with cap_exceeded, and
// nothing is held for it.
func TestBookCapped(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	h.Server("gpu2", "A100", 1, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	h.Wallet("alice", "100")
	wallet := h.Wallet("bob", "100")
	ctx := context.Background()
	tr, err := sqltreasury.Beside(ctx, h.Ledger, nil)
	require.NoError(t, err)
	_, err = tr.SetCap(ctx, "ops", "bob", 2, "cap-set/bob")
	require.NoError(t, err)

	require.NotNil(t, offer(t, h, "alice", "busy", job(2, "0.01"), 0).Contract)
	q := offer(t, h, "bob", "wait", job(2, "0.01"), time.Hour)
	require.NotNil(t, q.Queued, "bob's cap lets 2 GPUs through now")
	a100 := job(1, "0.01")
	a100.Class.Model, a100.Job.Profile.Duration, a100.TimeLimit = "A100", 10*time.Minute, 11*time.Minute
	a100.Prepayment = a100.CappedPrepayment(2)
	require.NotNil(t, offer(t, h, "bob", "a100", a100, 0).Contract, "bob runs one GPU elsewhere meanwhile")
	h.Events("bob")
	held := h.Balance(wallet).Held

	h.Run(90*time.Second, time.Second) // alice's job ends: gpu1 frees up
	ev := h.Events("bob")
	var left []exchange.Event
	for _, e := range ev {
		if e.Type == protocol.EventLeftBook {
			left = append(left, e)
		}
	}
	require.Len(t, left, 1, "%+v", ev)
	assert.Equal(t, contract.LeftCapped, left[0].Waiting.Left)
	assert.Equal(t, q.Queued.ID, left[0].Waiting.ID)
	assert.True(t, h.Balance(wallet).Held.Equal(held), "only the A100 contract's escrow")
	h.Audit()
}

// TestBookCountered: a waiting offer below a freed server's price is
// countered, the counter-offers reach its client as an event, and it
// waits on; the client may take one.
func TestBookCountered(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 1, server.Posted{P: contract.Flat(dectest.D("0.02"))})
	h.Wallet("alice", "100")
	h.Wallet("bob", "100")
	ctx := context.Background()
	require.NotNil(t, offer(t, h, "alice", "busy", job(1, "0.02"), 0).Contract)
	q := offer(t, h, "bob", "low", job(1, "0.01"), time.Hour)
	require.NotNil(t, q.Queued)
	h.Events("bob")

	h.Run(70*time.Second, time.Second)
	var counters []contract.Counter
	for _, e := range h.Events("bob") {
		if e.Type == protocol.EventCountered {
			assert.Equal(t, q.Queued.ID, e.Waiting.ID)
			counters = e.Counters
		}
	}
	require.NotEmpty(t, counters, "gpu1 countered when it freed up")
	assert.True(t, counters[0].Terms.P.Equal(contract.Flat(dectest.D("0.02"))))
	_, err := h.Store.Waiting(ctx, q.Queued.ID)
	require.NoError(t, err, "it waits on")
	took, err := h.House.Offer(ctx, "bob", protocol.OfferRequest{RequestID: "take", Terms: counters[0].Terms, Counter: counters[0].ID})
	require.NoError(t, err)
	require.NotNil(t, took.Contract, "%+v", took)
	h.Audit()
}

// TestAnsweredRequestKeepsItsAnswer: a request id answered without a
// contract keeps that answer for a minute. A stale copy of an earlier try
// (delivered late to an instance that was paused) or a retry whose answer
// was lost gets it again, even with terms a server would now accept, and
// asks no server; after the minute the id negotiates afresh.
func TestAnsweredRequestKeepsItsAnswer(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 2, server.Posted{P: contract.Flat(dectest.D("0.05"))})
	h.Wallet("dave", "100")
	first := offer(t, h, "dave", "r", job(1, "0.01"), 0)
	require.Nil(t, first.Contract)
	require.Positive(t, len(first.Rejections)+len(first.Counters), "%+v", first)
	asked := h.Router.AskedOf("gpu1")

	again := offer(t, h, "dave", "r", job(1, "0.05"), 0)
	assert.Nil(t, again.Contract, "the answer stands")
	assert.Equal(t, len(first.Rejections), len(again.Rejections))
	assert.Equal(t, len(first.Counters), len(again.Counters))
	assert.Equal(t, asked, h.Router.AskedOf("gpu1"), "no server asked again")
	cs, err := h.House.Contracts(context.Background(), "dave", 10)
	require.NoError(t, err)
	assert.Empty(t, cs)

	h.Advance(2 * time.Minute) // memstore counts the minute from the claim's deadline
	h.Beat()
	later := offer(t, h, "dave", "r", job(1, "0.05"), 0)
	require.NotNil(t, later.Contract, "past the minute, the id negotiates afresh: %+v", later)
	h.Audit()
}

// TestStandingOfferSurvivesRestart: the book is in the store: an offer
// queued before the exchange restarts is matched by the new instance
// once the GPU frees up, once. On memory and PostgreSQL.
func TestStandingOfferSurvivesRestart(t *testing.T) {
	onStores(t, exchange.Config{}, func(t *testing.T, h *housetest.Harness, _ bool) {
		ctx := context.Background()
		h.Server("gpu1", "H100", 1, nil)
		h.Wallet("alice", "100")
		wallet := h.Wallet("bob", "100")
		short := job(1, "0.01")
		short.Job.Profile.Duration = 5 * time.Second
		require.NotNil(t, offer(t, h, "alice", "first", short, 0).Contract)
		q := offer(t, h, "bob", "standing", short, time.Hour)
		require.NotNil(t, q.Queued, "%+v", q)

		h.House = h.Instance() // the restart: it knows gpu1 from its next heartbeat
		h.Run(20*time.Second, time.Second)
		cs, err := h.House.Contracts(ctx, "bob", 10)
		require.NoError(t, err)
		require.Len(t, cs, 1, "matched once")
		assert.Equal(t, q.Queued.ID, cs[0].ID, "the contract its request names")
		assert.Equal(t, contract.StateSettled, cs[0].State)
		assert.False(t, cs[0].QueuedAt.IsZero())
		assert.Equal(t, 1, count(eventsOf(h, "bob"), protocol.EventAccepted), "bob heard of it once")
		assert.True(t, h.Balance(wallet).Held.IsZero())
		noOpenHold(t, h)
	})
}

// count is how many of types are typ.
func count(types []protocol.EventType, typ protocol.EventType) int {
	n := 0
	for _, t := range types {
		if t == typ {
			n++
		}
	}
	return n
}

// TestBookSpreadsTies: waiting offers matched at one moment to servers
// that ask alike spread over them by their ids, as routing spreads
// offers (rotation), rather than all going to the server of the first
// id while the other's GPUs stand idle.
func TestBookSpreadsTies(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	for _, id := range []string{"gpu1", "gpu2"} {
		h.Server(id, "H100", 4, server.Posted{P: contract.Flat(dectest.D("0.01"))})
	}
	h.Wallet("alice", "1000")
	h.Wallet("bob", "1000")
	for _, id := range []string{"a1", "a2"} {
		r := offer(t, h, "alice", id, job(4, "0.01"), 0)
		require.NotNil(t, r.Contract, "%+v", r)
	}
	for _, id := range []string{"b1", "b2", "b3", "b4"} {
		r := offer(t, h, "bob", id, job(1, "0.01"), time.Hour)
		require.NotNil(t, r.Queued, "%+v", r)
	}
	h.Run(90*time.Second, time.Second)
	cs, err := h.House.Contracts(context.Background(), "bob", 10)
	require.NoError(t, err)
	require.Len(t, cs, 4, "every waiting offer matched once alice's jobs ended")
	on := map[string]int{}
	for _, c := range cs {
		on[c.Server]++
	}
	assert.Positive(t, on["gpu1"], "%v", on)
	assert.Positive(t, on["gpu2"], "the waiting offers all went to gpu1: %v", on)
	h.Audit()
}
