package natsvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
)

// postedAgent runs a real GPU server agent with n H100s whose posted
// price is reserve per GPU-second.
func (m *market) postedAgent(id string, n int, reserve string) {
	m.t.Helper()
	m.agentWith(id, n, server.Posted{P: contract.Flat(dectest.D(reserve))})
}

// TestQuote: a quote hears what the servers would answer, and binds
// nothing: no money held, no GPU claimed, no contract; its counter-offer
// may be taken.
func TestQuote(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("alice", "100")
	m.postedAgent("cheap", 2, "0.01")
	m.postedAgent("dear", 2, "0.03")
	waitFor(t, "both servers' hellos", func() bool { return m.ex.LiveServers() == 2 })
	alice := m.client("alice")
	ctx := context.Background()
	wallet := currency.WalletID(cred, "alice")

	all := terms("alice")
	all.GPUs = 2
	all.Prepayment = dectest.D("12")
	all.P = contract.Flat(dectest.D("0.02"))
	q, err := alice.Quote(ctx, all)
	require.NoError(t, err)
	assert.Equal(t, []string{"cheap"}, q.Accepts)
	require.Len(t, q.Counters, 1, "%+v", q)
	assert.Equal(t, "dear", q.Counters[0].Server)
	assert.True(t, q.Counters[0].Terms.P.Equal(contract.Flat(dectest.D("0.03"))), "the counter asks the reserve: %v", q.Counters[0].Terms.P)

	t.Run("NothingHeld", func(t *testing.T) {
		b := m.balance(wallet)
		assert.True(t, b.Available.Equal(dectest.D("100")) && b.Held.IsZero(), "%+v", b)
		cs, err := alice.Contracts(ctx, 10)
		require.NoError(t, err)
		assert.Empty(t, cs)
		// Both of cheap's GPUs are still free: quoting again says so, and
		// an offer for both gets them.
		again, err := alice.Quote(ctx, all)
		require.NoError(t, err)
		assert.Equal(t, []string{"cheap"}, again.Accepts)
	})
	t.Run("CounterTaken", func(t *testing.T) {
		reply, err := alice.Take(ctx, "take-dear", q.Counters[0])
		require.NoError(t, err)
		require.NotNil(t, reply.Contract, "%+v", reply)
		assert.Equal(t, "dear", reply.Contract.Server)
	})
	t.Run("OfferAfterQuote", func(t *testing.T) {
		reply, err := alice.Offer(ctx, "offer-cheap", all)
		require.NoError(t, err)
		require.NotNil(t, reply.Contract, "%+v", reply)
		assert.Equal(t, "cheap", reply.Contract.Server)
	})
	t.Run("InvalidTerms", func(t *testing.T) {
		bad := all
		bad.GPUs = 0
		_, err := alice.Quote(ctx, bad)
		assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "%v", err)
		bad = all
		bad.Client = "bob"
		_, err = alice.Quote(ctx, bad)
		assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err), "%v", err)
	})
	t.Run("NoMatch", func(t *testing.T) {
		big := all
		big.GPUs = 3
		_, err := alice.Quote(ctx, big)
		assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err), "%v", err)
	})
}

// TestQuoteRateLimited: quotes count against the client's request rate as
// offers do (here each is answered no_match: no server is there).
func TestQuoteRateLimited(t *testing.T) {
	m, reg := limitedMarket(t, 0, natsvc.Limits{Requests: 5, Burst: 5})
	nc := natstest.Connect(t, m.ns, protocol.InboxPrefix("alice"))
	body, err := protocol.Marshal(protocol.QuoteRequest{Terms: terms("alice")})
	require.NoError(t, err)
	quote := func() error {
		msg, err := nc.Request(protocol.ClientSubject("alice", protocol.VerbQuote), body, 2*time.Second)
		require.NoError(t, err)
		return natswire.DecodeError(msg)
	}
	for i := range 5 {
		assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(quote()), "quote %d of a burst of 5", i)
	}
	assert.Equal(t, bourse.ERateLimited, bourse.ErrorCode(quote()))
	assert.Equal(t, 1.0, refused(t, reg, "rate"))
}
