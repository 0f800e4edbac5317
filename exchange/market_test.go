package exchange_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/caps"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// record opens a contract on server, accepted and settled at, having
// used used GPU-seconds and been charged charged, with no money: what
// market data reads of the store.
func record(t *testing.T, h *housetest.Harness, id, server, used, charged string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	tm := contract.Terms{Client: "alice", Currency: housetest.Currency, GPUs: 1, TimeLimit: time.Minute,
		P: contract.Flat(dectest.D("1")), Prepayment: dectest.D("60")}
	_, created, err := h.Store.Open(ctx, contract.Contract{ID: id, Client: "alice", Server: server, Terms: tm,
		State: contract.StateAccepted, AcceptedAt: at.Add(-time.Minute), StartDeadline: at}, "")
	require.NoError(t, err)
	require.True(t, created)
	_, err = h.Store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
		c.State, c.Reason, c.SettledAt = contract.StateSettled, contract.ReasonCompleted, at
		c.Reading = &contract.Reading{Contract: id, Seq: 1, U: dectest.D(used), T: contract.Duration(time.Minute), S: dectest.D("1"), At: at}
		c.Charge, c.Refund = dectest.D(charged), tm.Prepayment.Sub(dectest.D(charged))
		return nil, nil
	})
	require.NoError(t, err)
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

// TestMarketTape: market data counts the contracts settled in its
// window, each once across reads, including one whose commit came after a
// later contract was read; it keeps at most MarketTape and then says it
// covers less than the window.
func TestMarketTape(t *testing.T) {
	h := housetest.New(t, exchange.Config{MarketWindow: time.Hour, MarketTape: 4})
	h.Server("gpu1", "H100", 4, nil)
	now := h.Now()
	record(t, h, "old", "gpu1", "60", "5.40", now.Add(-2*time.Hour))
	record(t, h, "c1", "gpu1", "60", "0.60", now.Add(-30*time.Minute))
	record(t, h, "c2", "gpu1", "60", "1.80", now.Add(-10*time.Minute))

	m := market(t, h)
	l := line(m, "H100")
	assert.Equal(t, 2, l.Settled, "the one of two hours ago is outside the window")
	assert.True(t, l.Prices.Low.Equal(dectest.D("0.01")) && l.Prices.High.Equal(dectest.D("0.03")), "%+v", l.Prices)
	assert.Equal(t, time.Hour, time.Duration(m.Window))
	assert.Equal(t, 4, l.GPUs)
	assert.Equal(t, 4, l.Free)

	h.Advance(10 * time.Second)
	record(t, h, "c3", "gpu1", "60", "1.20", h.Now().Add(-time.Second))
	// c4 settled before the last read but committed after it.
	record(t, h, "c4", "gpu1", "60", "1.20", now.Add(-2*time.Second))
	l = line(market(t, h), "H100")
	assert.Equal(t, 4, l.Settled, "read again, nothing counts twice, and the late one counts")
	assert.True(t, l.Prices.Median.Equal(dectest.D("0.02")), "median %s", l.Prices.Median)
	assert.True(t, l.Used.Equal(dectest.D("240")), "4 contracts of a GPU-minute: %s", l.Used)
	assert.True(t, l.Charged.Equal(dectest.D("4.8")), "%s", l.Charged)

	h.Advance(time.Second)
	record(t, h, "c5", "gpu1", "60", "3", h.Now())
	h.Advance(time.Second)
	m = market(t, h)
	l = line(m, "H100")
	assert.Equal(t, 4, l.Settled, "the tape keeps 4")
	assert.Less(t, time.Duration(m.Window), time.Hour, "and says it covers less than the window")
	assert.True(t, l.Prices.High.Equal(dectest.D("0.05")), "the latest are kept: %+v", l.Prices)

	h.Advance(2 * time.Hour)
	l = line(market(t, h), "H100")
	assert.Equal(t, 0, l.Settled, "an hour later, no contract of the window")
	assert.Nil(t, l.Prices)
}

// TestMarketPricesWhatWasPaid: twelve contracts at 0.5 a GPU-second that
// used nothing (charged nothing) do not move the market's prices from
// what three that ran paid, 0.002 (in the trial they moved the median
// from 0.002 to 0.5, and a going-rate bidder with a value of 0.4 then bid
// 0.4); a contract that used little moves the median no more than its
// GPU-seconds weigh.
func TestMarketPricesWhatWasPaid(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 16, server.Posted{P: contract.Flat(dectest.D("0.001"))})
	h.Wallet("carol", "100")
	h.Wallet("mallory", "1000")
	for i := range 3 {
		require.NotNil(t, offer(t, h, "carol", fmt.Sprint("c", i), job(1, "0.002"), 0).Contract)
	}
	idle := job(1, "0.5")
	idle.Job.Profile.Utilization = dectest.D("0")
	for i := range 12 {
		require.NotNil(t, offer(t, h, "mallory", fmt.Sprint("m", i), idle, 0).Contract)
	}
	h.Run(90*time.Second, time.Second)
	for _, client := range []string{"carol", "mallory"} {
		cs, err := h.House.Contracts(context.Background(), client, 20)
		require.NoError(t, err)
		for _, c := range cs {
			require.Equal(t, contract.StateSettled, c.State, "%s %s", client, c.ID)
		}
	}

	l := line(market(t, h), "H100")
	require.NotNil(t, l.Prices)
	assert.Equal(t, 3, l.Settled, "the twelve that paid nothing count nowhere")
	assert.True(t, l.Prices.Median.Equal(dectest.D("0.002")), "median %s", l.Prices.Median)
	assert.True(t, l.Prices.VWAP.Equal(dectest.D("0.002")), "vwap %s", l.Prices.VWAP)
	assert.True(t, l.Prices.High.Equal(dectest.D("0.002")), "high %s", l.Prices.High)
	assert.True(t, l.Used.Equal(dectest.D("180")) && l.Charged.Equal(dectest.D("0.36")), "%s GPU-seconds for %s", l.Used, l.Charged)

	going := strategy.Going{Prices: pricesOf{l}}
	bid := going.Bid(strategy.Job{Currency: housetest.Currency, Scale: 2, GPUs: 1, Class: contract.Class{Model: "H100"},
		Runtime: time.Minute, Utilization: dectest.D("1"), Value: dectest.D("0.4")}, 0, h.Now())
	assert.True(t, bid.P.Equal(contract.Flat(dectest.D("0.002"))), "the going rate is what was paid: %+v", bid.P)
	h.Audit()
}

// pricesOf is strategy.Prices from one line of market data.
type pricesOf struct{ l protocol.MarketModel }

func (p pricesOf) Median(_, model string) (decimal.Decimal, bool) {
	if p.l.Model != model || p.l.Prices == nil {
		return decimal.Decimal{}, false
	}
	return p.l.Prices.Median, true
}

// TestMarketMedianWeighsUse: the median is by GPU-seconds used, so that
// many contracts that used little cannot move it; low and high are any
// contract's.
func TestMarketMedianWeighsUse(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	h.Server("gpu1", "H100", 4, nil)
	now := h.Now()
	record(t, h, "big", "gpu1", "3600", "7.20", now.Add(-time.Minute)) // 0.002
	for i := range 12 {
		record(t, h, fmt.Sprint("small", i), "gpu1", "0.02", "0.01", now.Add(-time.Minute)) // 0.5
	}
	l := line(market(t, h), "H100")
	require.NotNil(t, l.Prices)
	assert.Equal(t, 13, l.Settled)
	assert.True(t, l.Prices.Median.Equal(dectest.D("0.002")), "median %s", l.Prices.Median)
	assert.True(t, l.Prices.Low.Equal(dectest.D("0.002")) && l.Prices.High.Equal(dectest.D("0.5")), "%+v", l.Prices)
	assert.True(t, l.Prices.VWAP.Equal(dectest.D("0.0020332")), "7.32 / 3600.24: %s", l.Prices.VWAP)
}

// TestQuoteClaimsNothing: a quote hears the node's answer without
// claiming its GPUs, and its counter-offer is honoured when taken.
func TestQuoteClaimsNothing(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	node := h.Server("gpu1", "H100", 2, nil)
	h.Wallet("alice", "100")
	tm := contract.Terms{Currency: housetest.Currency, GPUs: 2, TimeLimit: time.Minute, P: contract.Flat(dectest.D("0.01")), Prepayment: dectest.D("1.2"),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Minute}}}
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
	require.Len(t, q.Rejections, 1, "%+v", q)
	assert.Contains(t, q.Rejections[0].Reason, "free now", "no server has room: none is asked")
	h.Audit()
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
