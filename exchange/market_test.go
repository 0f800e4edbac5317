package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/pricing"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// record opens a contract of price on server, accepted at, with no money:
// what market data reads of the store.
func record(t *testing.T, h *housetest.Harness, id, server, price string, at time.Time) {
	t.Helper()
	tm := pricing.Terms{Client: "alice", Currency: housetest.Currency, GPUs: 1, TimeLimit: time.Minute,
		P: pricing.Flat(dectest.D(price)), Prepayment: dectest.D("1")}
	_, created, err := h.Store.Open(context.Background(), trade.Contract{ID: id, Client: "alice", Server: server, Terms: tm,
		State: trade.StateAccepted, AcceptedAt: at, StartDeadline: at.Add(time.Minute)}, "")
	require.NoError(t, err)
	require.True(t, created)
}

// market is the harness's market data of CRED.
func market(t *testing.T, h *housetest.Harness) protocol.Market {
	t.Helper()
	ms, err := h.House.Market(context.Background())
	require.NoError(t, err)
	require.Len(t, ms, 1)
	return ms[0]
}

// line is the market data's line of model.
func line(m protocol.Market, model string) protocol.MarketModel {
	for _, l := range m.Models {
		if l.Model == model {
			return l
		}
	}
	return protocol.MarketModel{}
}

// TestMarketTape: market data counts the contracts made in its window,
// each once across reads, including one whose commit came after a later
// contract was read; it keeps at most MarketTape and then says it
// covers less than the window.
func TestMarketTape(t *testing.T) {
	h := housetest.New(t, exchange.Config{MarketWindow: time.Hour, MarketTape: 4})
	h.Server("gpu1", "H100", 4, nil)
	now := h.Now()
	record(t, h, "old", "gpu1", "0.09", now.Add(-2*time.Hour))
	record(t, h, "c1", "gpu1", "0.01", now.Add(-30*time.Minute))
	record(t, h, "c2", "gpu1", "0.03", now.Add(-10*time.Minute))

	m := market(t, h)
	l := line(m, "H100")
	assert.Equal(t, 2, l.Contracts, "the one of two hours ago is outside the window")
	assert.True(t, l.Prices.Low.Equal(dectest.D("0.01")) && l.Prices.High.Equal(dectest.D("0.03")), "%+v", l.Prices)
	assert.Equal(t, time.Hour, time.Duration(m.Window))
	assert.Equal(t, 4, l.GPUs)
	assert.Equal(t, 4, l.Free)

	h.Advance(10 * time.Second)
	record(t, h, "c3", "gpu1", "0.02", h.Now().Add(-time.Second))
	// c4 was accepted before the last read but committed after it.
	record(t, h, "c4", "gpu1", "0.02", now.Add(-2*time.Second))
	l = line(market(t, h), "H100")
	assert.Equal(t, 4, l.Contracts, "read again, nothing counts twice, and the late one counts")
	assert.True(t, l.Prices.Median.Equal(dectest.D("0.02")), "median %s", l.Prices.Median)
	assert.True(t, l.GPUSeconds.Equal(dectest.D("240")), "4 contracts of a GPU-minute: %s", l.GPUSeconds)

	h.Advance(time.Second)
	record(t, h, "c5", "gpu1", "0.05", h.Now())
	h.Advance(time.Second)
	m = market(t, h)
	l = line(m, "H100")
	assert.Equal(t, 4, l.Contracts, "the tape keeps 4")
	assert.Less(t, time.Duration(m.Window), time.Hour, "and says it covers less than the window")
	assert.True(t, l.Prices.High.Equal(dectest.D("0.05")), "the latest are kept: %+v", l.Prices)

	h.Advance(2 * time.Hour)
	l = line(market(t, h), "H100")
	assert.Equal(t, 0, l.Contracts, "an hour later, no contract of the window")
	assert.Nil(t, l.Prices)
}

// TestQuoteClaimsNothing: a quote hears the node's answer without
// claiming its GPUs, and its counter-offer is honoured when taken.
func TestQuoteClaimsNothing(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	node := h.Server("gpu1", "H100", 2, nil)
	h.Wallet("alice", "100")
	tm := pricing.Terms{Currency: housetest.Currency, GPUs: 2, TimeLimit: time.Minute, P: pricing.Flat(dectest.D("0.01")), Prepayment: dectest.D("1.2"),
		Job: &pricing.JobSpec{Profile: &pricing.Profile{Utilization: dectest.D("1"), Duration: time.Minute}}}
	for i := range 3 {
		q, err := h.House.Quote(context.Background(), "alice", protocol.QuoteRequest{Terms: tm})
		require.NoError(t, err)
		assert.Equal(t, []string{"gpu1"}, q.Accepts, "quote %d", i)
	}
	assert.Equal(t, 2, node.Hello(h.Now()).Free, "no GPU claimed")
	reply, err := h.House.Offer(context.Background(), "alice", protocol.OfferRequest{RequestID: "r1", Terms: tm})
	require.NoError(t, err)
	require.NotNil(t, reply.Contract)
	q, err := h.House.Quote(context.Background(), "alice", protocol.QuoteRequest{Terms: tm})
	require.NoError(t, err)
	assert.Empty(t, q.Accepts, "its GPUs are the contract's now")
	assert.Equal(t, fmt.Sprint([]string{"gpu1"}), fmt.Sprint(serversOf(q)))
	h.Audit()
}

func serversOf(q protocol.QuoteReply) []string {
	var out []string
	for _, r := range q.Rejections {
		out = append(out, r.Server)
	}
	for _, c := range q.Counters {
		out = append(out, c.Server)
	}
	return out
}

// TestMarketSkipsCapsUnits: the caps' units are currencies of the ledger
// that nothing is traded in; market data does not publish an empty
// market for each of them.
func TestMarketSkipsCapsUnits(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	ctx := context.Background()
	for _, code := range []currency.Code{caps.GPUCode, caps.SpendCode(housetest.Currency)} {
		require.NoError(t, h.Ledger.CreateCurrency(ctx, currency.Currency{Code: code, Scale: 0}))
	}
	ms, err := h.House.Market(ctx)
	require.NoError(t, err)
	require.Len(t, ms, 1, "%+v", ms)
	assert.Equal(t, string(housetest.Currency), ms[0].Currency)
}
