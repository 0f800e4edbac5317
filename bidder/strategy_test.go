package bidder

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

var job = Job{Name: "train", Currency: "CRED", GPUs: 2, Runtime: 10 * time.Second,
	Utilization: decimal.RequireFromString("0.8"), Value: decimal.RequireFromString("0.05"), Scale: 2}

func TestTermsAreValid(t *testing.T) {
	scale := func(string) (int32, bool) { return 2, true }
	now := time.Now()
	for _, s := range []Strategy{Fixed{}, Cheapest{}, &Adaptive{}} {
		for rejected := range 12 {
			tm := s.Bid(job, rejected, now)
			tm.Client = "alice"
			require.NoError(t, contract.Validate(tm, scale), "%T after %d rejections", s, rejected)
			assert.Equal(t, 15*time.Second, tm.TimeLimit)
			assert.True(t, tm.Prepayment.Equal(contract.MaxCharge(tm, 2)))
		}
	}
}

func TestCheapestTakesCheapestAffordableCounter(t *testing.T) {
	now := time.Now()
	k := func(id, price string, gpus int, valid time.Duration) protocol.Counter {
		tm := Fixed{}.Bid(job, 0, now)
		tm.GPUs = gpus
		tm.P = contract.Flat(decimal.RequireFromString(price))
		return protocol.Counter{ID: id, Terms: tm, ValidUntil: now.Add(valid)}
	}
	counters := []protocol.Counter{
		k("dear", "0.06", 2, time.Minute),   // above the value
		k("ok", "0.04", 2, time.Minute),     // the one
		k("ok2", "0.045", 2, time.Minute),   // dearer
		k("stale", "0.01", 2, -time.Second), // expired
		k("small", "0.01", 1, time.Minute),  // fewer GPUs than the job needs
	}
	got := Cheapest{}.Take(job, counters, now)
	require.NotNil(t, got)
	assert.Equal(t, "ok", got.ID)
	assert.Nil(t, Cheapest{}.Take(job, counters[:1], now))
	assert.Nil(t, Fixed{}.Take(job, counters, now))
}

func TestAdaptiveRaisesAfterRejection(t *testing.T) {
	a := &Adaptive{}
	now := time.Now()
	price := func(rejected int) decimal.Decimal { return a.Bid(job, rejected, now).P.Eval(decimal.NewFromInt(1)) }
	p0, p1, p9 := price(0), price(1), price(9)
	assert.True(t, p1.GreaterThan(p0), "%s then %s", p0, p1)
	assert.True(t, p9.Equal(job.Value), "capped at the value: %s", p9)

	a.Observe(true, time.Millisecond)
	assert.True(t, price(0).LessThan(p0), "a quick acceptance lowers the opening bid")
	a.Observe(false, time.Second)
	a.Observe(false, time.Second)
	assert.True(t, price(0).GreaterThan(p0))
}
