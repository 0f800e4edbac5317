package bidder_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/bidder/strategy"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// scriptedExchange answers ada's offers over the documented wire: the
// errors in errs to the first tries, in turn, then a contract; it keeps
// the request id of every try.
type scriptedExchange struct {
	mu  sync.Mutex
	ids []string
}

// tries is the request id of every try, in order.
func (x *scriptedExchange) tries() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]string(nil), x.ids...)
}

func scriptExchange(t *testing.T, nc *nats.Conn, errs ...bourse.Code) *scriptedExchange {
	t.Helper()
	x := &scriptedExchange{}
	_, err := nc.Subscribe(protocol.ClientSubject("ada", protocol.VerbOffer), func(m *nats.Msg) {
		var req protocol.OfferRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			t.Errorf("offer: %v", err)
			return
		}
		x.mu.Lock()
		n := len(x.ids)
		x.ids = append(x.ids, req.RequestID)
		x.mu.Unlock()
		r := nats.NewMsg(m.Reply)
		if n < len(errs) {
			code, msg, body := protocol.EncodeError(&bourse.Error{Code: errs[n], Message: "database unavailable"})
			r.Header.Set(micro.ErrorCodeHeader, code)
			r.Header.Set(micro.ErrorHeader, msg)
			r.Data = body
		} else {
			r.Data, _ = json.Marshal(protocol.OfferReply{Contract: &protocol.ContractView{ID: "c-1", Client: "ada", State: contract.StateAccepted}})
		}
		_ = m.RespondMsg(r)
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	return x
}

// TestRetriesWhatMayHaveGoneThrough: an exchange that answers
// unavailable (its database went away as the offer's transaction
// committed, say), deadline_exceeded or internal cannot say whether the
// offer made a contract. The SDK tries again under the same request id,
// after a growing wait, within its retries, so that its client learns the
// contract the first try made; past its retries it gives the last answer.
func TestRetriesWhatMayHaveGoneThrough(t *testing.T) {
	ns := natstest.Start(t)
	codes := []bourse.Code{bourse.EUnavailable, bourse.EDeadlineExceeded, bourse.EInternal}
	x := scriptExchange(t, natstest.Connect(t, ns, ""), codes...)
	ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL(), Retries: len(codes)})
	require.NoError(t, err)
	defer ada.Close()
	reply, err := ada.Offer(context.Background(), "train-1", strategy.Fixed{}.Bid(job("train", time.Minute), 0, time.Now()))
	require.NoError(t, err)
	require.NotNil(t, reply.Contract)
	assert.Equal(t, "c-1", reply.Contract.ID)
	assert.Equal(t, []string{"train-1", "train-1", "train-1", "train-1"}, x.tries(), "every try under the first's request id")

	t.Run("past its retries", func(t *testing.T) {
		ns := natstest.Start(t)
		x := scriptExchange(t, natstest.Connect(t, ns, ""), bourse.EUnavailable, bourse.EUnavailable, bourse.EUnavailable)
		ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL(), Retries: 1})
		require.NoError(t, err)
		defer ada.Close()
		_, err = ada.Offer(context.Background(), "train-2", strategy.Fixed{}.Bid(job("train", time.Minute), 0, time.Now()))
		assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
		assert.Equal(t, []string{"train-2", "train-2"}, x.tries())
	})
	t.Run("an answer that says no", func(t *testing.T) {
		ns := natstest.Start(t)
		x := scriptExchange(t, natstest.Connect(t, ns, ""), bourse.ENoMatch)
		ada, err := bidder.Dial(bidder.Config{ID: "ada", URL: ns.ClientURL()})
		require.NoError(t, err)
		defer ada.Close()
		_, err = ada.Offer(context.Background(), "train-3", strategy.Fixed{}.Bid(job("train", time.Minute), 0, time.Now()))
		assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err), "%v", err)
		assert.Len(t, x.tries(), 1, "no_match says the offer made no contract: nothing to retry")
	})
}
