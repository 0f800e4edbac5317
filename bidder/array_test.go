package bidder_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
	"github.com/bourse/bourse/server"
)

// concurrency counts the Decide calls under way across servers, and the
// most at once.
type concurrency struct {
	mu        sync.Mutex
	now, most int
}

func (c *concurrency) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now++
	c.most = max(c.most, c.now)
}

func (c *concurrency) leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now--
}

// reset starts a count afresh and says the most there were.
func (c *concurrency) reset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	most := c.most
	c.most = 0
	return most
}

// slowDecisions is a server's policy that takes a while to decide
// client's offers, and counts its decisions of them under way: a server
// decides one offer at a time, so across servers that each get one
// offer of an array, the decisions under way are the array's offers in
// negotiation. Others' (the market's own quotes) are decided at once.
type slowDecisions struct {
	server.Policy
	client string
	c      *concurrency
}

func (p slowDecisions) Decide(offer contract.Terms, st server.View) server.Decision {
	if offer.Client != p.client {
		return p.Policy.Decide(offer, st)
	}
	p.c.enter()
	defer p.c.leave()
	time.Sleep(200 * time.Millisecond)
	return p.Policy.Decide(offer, st)
}

// slowServers is how many servers startSlowServers starts: s0, s1, …
const slowServers = 8

// startSlowServers starts a market of slowServers servers that each
// decide ada's offers slowly (slowDecisions), counted in c, under the
// exchange's limits, and funds ada.
func startSlowServers(t *testing.T, c *concurrency, limits natsvc.Limits) *markettest.Market {
	t.Helper()
	var specs []scenario.ServerSpec
	for i := range slowServers {
		s := markettest.PostedH100s("s"+strconv.Itoa(i), 4, decimal.RequireFromString("0.30"))
		s.Policy = slowDecisions{s.Policy, "ada", c}
		specs = append(specs, s)
	}
	m := markettest.Start(t, market.Config{Clients: []scenario.ClientSpec{}, Servers: specs, Limits: limits})
	m.Fund("CRED", decimal.NewFromInt(100), "ada")
	return m
}

// onServer is an offer for index i's own server.
func onServer(i int, name string) contract.Terms {
	terms := strategy.Fixed{}.Bid(job(name, 300*time.Millisecond), 0, time.Now())
	terms.Server = "s" + strconv.Itoa(i%slowServers)
	return terms
}

// TestOfferArrayInFlight: an array's offers are in negotiation
// InFlight at a time, never more, and as many as that when there are
// enough; the answers come back in the indexes' order, each under its
// own request id, whatever order they were answered in. Each index names
// its own server, so that no server's one-at-a-time deciding hides the
// client's concurrency.
func TestOfferArrayInFlight(t *testing.T) {
	c := &concurrency{}
	ada := dial(t, startSlowServers(t, c, natsvc.Limits{}), "ada")
	for _, tc := range []struct {
		inFlight, throttle int
		indexes            []int
		want               int // the most in negotiation at once
	}{
		{1, 0, []int{0, 1, 2, 3}, 1},
		{3, 0, []int{0, 1, 2, 3, 4, 5, 6, 7}, 3},
		{0, 0, []int{2, 3, 5, 7, 11, 13}, bidder.DefaultInFlight},
		{16, 0, []int{0, 1, 2, 3, 4}, 5},
		// A throttle's senders are more than InFlight: still InFlight
		// in negotiation at once.
		{2, 6, []int{0, 1, 2, 3, 4, 5}, 2},
	} {
		t.Run(fmt.Sprintf("InFlight=%d,Throttle=%d", tc.inFlight, tc.throttle), func(t *testing.T) {
			c.reset()
			var mu sync.Mutex
			answered := 0
			id := fmt.Sprintf("inflight-%d-%d", tc.inFlight, tc.throttle)
			offers := ada.OfferArray(context.Background(), id, tc.indexes, func(i int) contract.Terms {
				return onServer(i, "array")
			}, bidder.ArrayOptions{InFlight: tc.inFlight, Throttle: tc.throttle}, func(bidder.ArrayOffer) {
				mu.Lock()
				defer mu.Unlock()
				answered++
			})
			assert.Equal(t, tc.want, c.reset(), "offers in negotiation at once")
			assert.Equal(t, len(tc.indexes), answered, "onDone once per index")
			require.Len(t, offers, len(tc.indexes))
			for n, i := range tc.indexes {
				o := offers[n]
				assert.Equal(t, i, o.Index)
				assert.Equal(t, id+"/"+strconv.Itoa(i), o.RequestID)
				require.NoError(t, o.Err, "index %d", i)
				require.True(t, o.Made(), "index %d: %+v", i, o.Reply)
				assert.Equal(t, "s"+strconv.Itoa(i%slowServers), o.Reply.Contract.Server, "index %d: its own terms", i)
			}
		})
	}
}

// TestOfferArrayRateLimited: with the exchange's per-client limits set
// low, an array sent faster than they allow is refused rate_limited;
// every refused offer is sent again under its request id until the
// exchange takes it, so that every index makes its one contract, and
// from the first refusal on the array goes one offer at a time. The
// client itself retries nothing (Retries < 0): it is the array that
// resends.
//
// A burst of 2 lets two of the first four offers in, and answers the
// other two's refusals at once. The servers take their time deciding,
// so that the refusals are back before either of the first two is
// answered: every offer after them is sent one at a time. (One sent
// earlier, as a sender's first two are answered before the refusals,
// would find the exchange's answers to refusals spent too, and be
// dropped unanswered: docs/benchmarks.md.)
func TestOfferArrayRateLimited(t *testing.T) {
	c := &concurrency{}
	m := startSlowServers(t, c, natsvc.Limits{Requests: 20, Burst: 2})
	ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: m.URL(), Timeout: 5 * time.Second, Retries: -1})
	require.NoError(t, err)
	defer ada.Close()
	indexes := make([]int, slowServers)
	for i := range indexes {
		indexes[i] = i
	}
	offers := ada.OfferArray(context.Background(), "paced", indexes, func(i int) contract.Terms {
		return onServer(i, "paced")
	}, bidder.ArrayOptions{InFlight: 4}, nil)
	ids := map[string]bool{}
	for _, o := range offers {
		require.NoError(t, o.Err, "index %d", o.Index)
		require.NotNil(t, o.Reply.Contract, "index %d", o.Index)
		ids[o.Reply.Contract.ID] = true
	}
	assert.Len(t, ids, slowServers, "a contract per index")
	ks, err := ada.Contracts(context.Background(), 100)
	require.NoError(t, err)
	assert.Len(t, ks, slowServers, "no offer made a contract twice")
	// The first two, and the first refused one sent again while they
	// were decided; never four.
	assert.LessOrEqual(t, c.reset(), 3, "offers in negotiation at once")
}

// TestOfferArrayThrottle: with a throttle of 2, at most two of the
// array's contracts are live at once, and two at the start: the next
// offer goes only as one settles.
func TestOfferArrayThrottle(t *testing.T) {
	m, _ := startMarket(t)
	ada := dial(t, m, "ada")
	offers := ada.OfferArray(context.Background(), "thr", []int{0, 2, 4, 6, 8}, func(int) contract.Terms {
		return strategy.Fixed{}.Bid(job("throttled", 300*time.Millisecond), 0, time.Now())
	}, bidder.ArrayOptions{Throttle: 2}, nil)
	var ks []protocol.ContractView
	for _, o := range offers {
		require.True(t, o.Made(), "index %d: %v %+v", o.Index, o.Err, o.Reply)
		ks = append(ks, settled(t, ada, o.Reply.Contract.ID))
	}
	most := 0
	for _, k := range ks {
		live := 0
		for _, o := range ks {
			if !o.AcceptedAt.After(k.AcceptedAt) && o.SettledAt.After(k.AcceptedAt) {
				live++
			}
		}
		most = max(most, live)
	}
	assert.Equal(t, 2, most, "contracts live at once")
}

// settled waits for contract id to settle and returns it.
func settled(t *testing.T, c *bidder.Client, id string) protocol.ContractView {
	t.Helper()
	var k protocol.ContractView
	require.Eventually(t, func() bool {
		var err error
		k, err = c.Contract(context.Background(), id)
		return err == nil && k.State == contract.StateSettled
	}, 20*time.Second, 50*time.Millisecond, "%s did not settle", id)
	return k
}

// TestOfferArrayStopsWhenAway: with no exchange listening, the first
// offer gets no answer, and the ones not yet sent are not sent, each
// said not offered, for the same reason.
func TestOfferArrayStopsWhenAway(t *testing.T) {
	ns := natstest.Start(t)
	ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL(), Timeout: time.Second, Retries: -1})
	require.NoError(t, err)
	defer ada.Close()
	offers := ada.OfferArray(context.Background(), "away", []int{0, 1, 2, 3}, func(int) contract.Terms {
		return strategy.Fixed{}.Bid(job("away", time.Second), 0, time.Now())
	}, bidder.ArrayOptions{InFlight: 1}, nil)
	require.Len(t, offers, 4)
	assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(offers[0].Err), "%v", offers[0].Err)
	assert.NotContains(t, offers[0].Err.Error(), "not offered")
	for _, o := range offers[1:] {
		assert.ErrorContains(t, o.Err, "not offered: ", "index %d", o.Index)
		assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(o.Err), "index %d: the first's reason", o.Index)
	}
}
