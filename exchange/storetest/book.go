package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
)

// waiting is an offer of client waiting in the book at price, queued at
// `at`, for an hour.
func waiting(id, client, price string, at time.Time) contract.Waiting {
	c := newContract(id, client, at)
	return contract.Waiting{ID: id, Client: client, RequestID: "r-" + id, Terms: c.Terms, Price: dectest.D(price),
		QueuedAt: at, Until: at.Add(time.Hour)}
}

var noLimits = exchange.BookLimits{}

// queue queues w and requires it to be created.
func (f *fixture) queue(w contract.Waiting) contract.Waiting {
	f.t.Helper()
	q, err := f.s.Queue(f.ctx, w, "", noLimits)
	require.NoError(f.t, err)
	require.True(f.t, q.Created, "%s", w.ID)
	require.Nil(f.t, q.Outbid)
	return q.Waiting
}

func waitingIDs(ws []contract.Waiting) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.ID
	}
	return out
}

// testBook: the book keeps waiting offers in its order (the highest price,
// then the earliest, then by id), says where each stands, selects by
// currency, client and due time, and gives each up once.
func testBook(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.queue(waiting("w-a", "alice", "0.02", t0))
	assert.Equal(t, 0, a.Ahead)
	f.queue(waiting("w-b", "bob", "0.03", t0.Add(time.Second)))
	f.queue(waiting("w-c", "alice", "0.02", t0.Add(-time.Nanosecond)))
	d := waiting("w-d", "bob", "0.02", t0)
	d.Until = t0.Add(time.Minute)
	got := f.queue(d)
	assert.Equal(t, 3, got.Ahead, "b pays more, c came a nanosecond earlier, a ties and sorts first by id")
	other := waiting("w-e", "alice", "9", t0)
	other.Terms.Currency = "OTHER"
	f.queue(other)

	again, err := f.s.Queue(f.ctx, waiting("w-a", "alice", "0.05", t0.Add(time.Hour)), "", noLimits)
	require.NoError(t, err)
	assert.False(t, again.Created, "queued already")
	assert.True(t, again.Waiting.Price.Equal(dectest.D("0.02")), "the one stored: %s", again.Waiting.Price)

	book, err := f.s.Book(f.ctx, exchange.BookQuery{Currency: string(gpu)})
	require.NoError(t, err)
	assert.Equal(t, []string{"w-b", "w-c", "w-a", "w-d"}, waitingIDs(book))
	same(t, newContract("w-b", "bob", t0.Add(time.Second)), contract.Contract{ID: "w-b", Client: "bob", Server: server, State: contract.StateAccepted,
		Terms: book[0].Terms, AcceptedAt: t0.Add(time.Second), StartDeadline: t0.Add(time.Second + time.Minute)})
	mine, err := f.s.Book(f.ctx, exchange.BookQuery{Client: "alice", Limit: 2})
	require.NoError(t, err)
	assert.Equal(t, []string{"w-e", "w-c"}, waitingIDs(mine), "alice's, best first, two")
	due, err := f.s.Book(f.ctx, exchange.BookQuery{DueBy: t0.Add(30 * time.Minute)})
	require.NoError(t, err)
	assert.Equal(t, []string{"w-d"}, waitingIDs(due))
	for i, want := range [][]string{{"w-c", "w-a", "w-d"}, {"w-a", "w-d"}, {"w-d"}, {}} {
		page, err := f.s.Book(f.ctx, exchange.BookQuery{Currency: string(gpu), After: &book[i]})
		require.NoError(t, err)
		assert.Equal(t, want, waitingIDs(page), "after %s: by price, then time, then id", book[i].ID)
	}
	page, err := f.s.Book(f.ctx, exchange.BookQuery{Currency: string(gpu), After: &book[0], Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"w-c"}, waitingIDs(page), "a page of one")

	w, err := f.s.Waiting(f.ctx, "w-a")
	require.NoError(t, err)
	assert.Equal(t, 2, w.Ahead)
	assert.True(t, w.QueuedAt.Equal(t0) && w.Until.Equal(t0.Add(time.Hour)))
	gone, err := f.s.Unqueue(f.ctx, "w-b")
	require.NoError(t, err)
	assert.Equal(t, "bob", gone.Client)
	_, err = f.s.Unqueue(f.ctx, "w-b")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "once")
	_, err = f.s.Waiting(f.ctx, "w-b")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	w, err = f.s.Waiting(f.ctx, "w-a")
	require.NoError(t, err)
	assert.Equal(t, 1, w.Ahead, "b has gone")
}

// testBookLimits: a client's waiting offers and the whole book are
// bounded, and the refusal writes nothing.
func testBookLimits(t *testing.T, open Opener) {
	f := newFixture(t, open)
	lim := exchange.BookLimits{PerClient: 2, Total: 3}
	for i := range 2 {
		q, err := f.s.Queue(f.ctx, waiting(fmt.Sprint("a", i), "alice", "0.01", t0), "", lim)
		require.NoError(t, err)
		require.True(t, q.Created)
	}
	_, err := f.s.Queue(f.ctx, waiting("a2", "alice", "0.01", t0), "", lim)
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(err), "alice's third: %v", err)
	q, err := f.s.Queue(f.ctx, waiting("b0", "bob", "0.01", t0), "", lim)
	require.NoError(t, err)
	require.True(t, q.Created)
	_, err = f.s.Queue(f.ctx, waiting("c0", "carol", "0.01", t0), "", lim)
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(err), "the fourth in all, no better than the last: %v", err)
	book, err := f.s.Book(f.ctx, exchange.BookQuery{})
	require.NoError(t, err)
	assert.Len(t, book, 3)

	// A full book takes an offer sure to pay more than the last of its
	// currency, which leaves; one of another currency outbids nothing.
	other := waiting("x0", "dan", "5", t0)
	other.Terms.Currency = "OTHER"
	_, err = f.s.Queue(f.ctx, other, "", lim)
	assert.Equal(t, bourse.EBookFull, bourse.ErrorCode(err), "no offer of its currency to outbid: %v", err)
	q, err = f.s.Queue(f.ctx, waiting("c1", "carol", "0.02", t0.Add(time.Second)), "", lim)
	require.NoError(t, err)
	require.True(t, q.Created)
	require.NotNil(t, q.Outbid, "the last, bob's, outbid")
	assert.Equal(t, "b0", q.Outbid.ID)
	assert.Equal(t, 0, q.Waiting.Ahead, "carol's pays the most")
	assert.Equal(t, []string{"c1", "a0", "a1"}, waitingIDs(mustBook(t, f)))
	_, err = f.s.Waiting(f.ctx, "b0")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "gone")
}

// testBookAndContracts: a contract ends its id's wait in the transaction
// that makes it; one made from the book needs its waiting offer still
// there, else nothing is made and no money moves; an offer whose
// contract exists is not queued; a lock held by another try refuses the
// queue.
func testBookAndContracts(t *testing.T, open Opener) {
	f := newFixture(t, open)
	wallet := f.wallet("alice", "100")

	f.queue(waiting("m1", "alice", "0.01", t0))
	c := newContract("m1", "alice", t0.Add(time.Minute))
	c.QueuedAt = t0
	stored, created, err := f.s.Open(f.ctx, c, "", reserve(c, "escrow/m1"))
	require.NoError(t, err)
	require.True(t, created)
	assert.True(t, stored.QueuedAt.Equal(t0))
	_, err = f.s.Waiting(f.ctx, "m1")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "matched: out of the book")
	f.balance(wallet, "90", "10")

	f.queue(waiting("m2", "alice", "0.01", t0))
	_, err = f.s.Unqueue(f.ctx, "m2")
	require.NoError(t, err)
	c2 := newContract("m2", "alice", t0.Add(time.Minute))
	c2.QueuedAt = t0
	_, created, err = f.s.Open(f.ctx, c2, "", reserve(c2, "escrow/m2"))
	assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "cancelled meanwhile: %v", err)
	assert.False(t, created)
	f.balance(wallet, "90", "10")
	_, err = f.s.Contract(f.ctx, "m2")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))

	f.queue(waiting("m3", "alice", "0.01", t0))
	f.open(newContract("m3", "alice", t0.Add(time.Minute)))
	_, err = f.s.Waiting(f.ctx, "m3")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "a retry of the request accepted at once ends its wait")

	_, err = f.s.Queue(f.ctx, waiting("m1", "alice", "0.01", t0), "", noLimits)
	assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "its contract exists: %v", err)

	cl := exchange.Lock{ID: "m4", Token: "other", Until: t0.Add(time.Minute)}
	_, err = f.s.Lock(f.ctx, cl, t0)
	require.NoError(t, err)
	_, err = f.s.Queue(f.ctx, waiting("m4", "alice", "0.01", t0), "mine", noLimits)
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "another try holds the id: %v", err)
	q, err := f.s.Queue(f.ctx, waiting("m4", "alice", "0.01", t0), "other", noLimits)
	require.NoError(t, err)
	assert.True(t, q.Created, "the holder queues it")
}

// testBookConcurrent: queues at once never pass a client's bound; a match
// (Open from the book) and a cancel (Unqueue) of one waiting offer race,
// and exactly one wins, with the money held only if the match did.
func testBookConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	wallet := f.wallet("alice", "1000")
	lim := exchange.BookLimits{PerClient: 3}
	var made atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			q, err := f.s.Queue(f.ctx, waiting(fmt.Sprint("q", i), "alice", "0.01", t0), "", lim)
			if err == nil && q.Created {
				made.Add(1)
			} else if bourse.ErrorCode(err) != bourse.EBookFull {
				t.Errorf("queue %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(3), made.Load(), "at most 3 of alice's waiting")
	for _, w := range mustBook(t, f) {
		_, err := f.s.Unqueue(f.ctx, w.ID)
		require.NoError(t, err)
	}

	const n = 12
	var matched, cancelled atomic.Int32
	for i := range n {
		id := fmt.Sprint("race", i)
		f.queue(waiting(id, "alice", "0.01", t0))
		c := newContract(id, "alice", t0.Add(time.Minute))
		c.QueuedAt = t0
		wg.Go(func() {
			_, created, err := f.s.Open(f.ctx, c, "", reserve(c, "escrow/"+id))
			switch {
			case err == nil && created:
				matched.Add(1)
			case bourse.ErrorCode(err) != bourse.EConflict:
				t.Errorf("open %s: %v", id, err)
			}
		})
		wg.Go(func() {
			_, err := f.s.Unqueue(f.ctx, id)
			switch {
			case err == nil:
				cancelled.Add(1)
			case bourse.ErrorCode(err) != bourse.ENotFound:
				t.Errorf("unqueue %s: %v", id, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, int32(n), matched.Load()+cancelled.Load(), "each once: matched %d, cancelled %d", matched.Load(), cancelled.Load())
	held := dectest.D("10").Mul(dectest.D(fmt.Sprint(matched.Load())))
	f.balance(wallet, dectest.D("1000").Sub(held).String(), held.String())
	assert.Empty(t, mustBook(t, f))
}

func mustBook(t *testing.T, f *fixture) []contract.Waiting {
	t.Helper()
	b, err := f.s.Book(f.ctx, exchange.BookQuery{})
	require.NoError(t, err)
	return b
}
