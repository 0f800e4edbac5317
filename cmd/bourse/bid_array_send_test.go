package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// batchExchange stands in for the exchange on an embedded NATS server:
// it holds each offer until batch of them are waiting (or every offer
// not yet answered is), then answers them all, the last come first.
// Offers sent one after another would never make a batch of two.
type batchExchange struct {
	batch, total int
	refuse       int           // times each request id is refused as rate_limited first
	delay        time.Duration // with batch 1: how long each answer takes, the handler free meanwhile

	mu       sync.Mutex
	held     []*nats.Msg
	answered int
	most     int      // the most offers held at once
	order    []string // request ids, as they came to be held
	tries    map[string]int

	outstanding int // answers delayed, not yet sent
}

func (x *batchExchange) serve(t *testing.T, url, client string) {
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	_, err = nc.Subscribe(protocol.ClientSubject(client, "*"), func(m *nats.Msg) {
		verb := m.Subject[strings.LastIndex(m.Subject, ".")+1:]
		if verb != protocol.VerbOffer {
			_ = m.Respond([]byte(`{"currency":"CRED","scale":2}`))
			return
		}
		var req protocol.OfferRequest
		if json.Unmarshal(m.Data, &req) != nil {
			return
		}
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.tries == nil {
			x.tries = map[string]int{}
		}
		if x.tries[req.RequestID]++; x.tries[req.RequestID] <= x.refuse {
			code, text, body := protocol.EncodeError(&bourse.Error{Code: bourse.ERateLimited, RetryAfterMS: 1, Message: "more than 100 requests a second"})
			reply := nats.NewMsg(m.Reply)
			reply.Header.Set(micro.ErrorCodeHeader, code)
			reply.Header.Set(micro.ErrorHeader, text)
			reply.Data = body
			_ = m.RespondMsg(reply)
			return
		}
		x.order = append(x.order, req.RequestID)
		if x.delay > 0 {
			x.outstanding++
			x.most = max(x.most, x.outstanding)
			go func() {
				time.Sleep(x.delay)
				x.mu.Lock()
				defer x.mu.Unlock()
				x.outstanding--
				reply, _ := json.Marshal(protocol.OfferReply{Contract: &protocol.ContractView{ID: "c-" + strings.ReplaceAll(req.RequestID, "/", "-"), Server: "gpu1"}})
				_ = m.Respond(reply)
			}()
			return
		}
		x.held = append(x.held, m)
		x.most = max(x.most, len(x.held))
		if len(x.held) < x.batch && len(x.held) < x.total-x.answered {
			return
		}
		for _, h := range slices.Backward(x.held) {
			var r protocol.OfferRequest
			_ = json.Unmarshal(h.Data, &r)
			reply, _ := json.Marshal(protocol.OfferReply{Contract: &protocol.ContractView{ID: "c-" + strings.ReplaceAll(r.RequestID, "/", "-"), Server: "gpu1"}})
			_ = h.Respond(reply)
		}
		x.answered += len(x.held)
		x.held = nil
	})
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
}

// TestArrayInFlight: an array's offers are in negotiation --in-flight at
// a time, never more, taken in the indexes' order; the answers, which
// come in another order, print in the indexes' order.
func TestArrayInFlight(t *testing.T) {
	ns := natstest.Start(t)
	for _, tc := range []struct {
		spec     string
		inFlight int
		indexes  []int
	}{
		{"0-9", 4, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"0-20:3", 16, []int{0, 3, 6, 9, 12, 15, 18}},
		{"5", 1, []int{0, 1, 2, 3, 4}},
	} {
		t.Run(tc.spec+"/"+strconv.Itoa(tc.inFlight), func(t *testing.T) {
			client := fmt.Sprintf("ada%d", tc.inFlight)
			x := &batchExchange{batch: tc.inFlight, total: len(tc.indexes)}
			x.serve(t, ns.ClientURL(), client)
			var out, errOut bytes.Buffer
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code := run(ctx, []string{"bid", "--nats", ns.ClientURL(), "--id", client, "--timeout", "5s", "offer", "--price", "0.3",
				"--command", "/bin/true", "--array", tc.spec, "--in-flight", strconv.Itoa(tc.inFlight), "--request-id", "r"}, &out, &errOut)
			require.Zero(t, code, "%s", errOut.String())

			x.mu.Lock()
			defer x.mu.Unlock()
			assert.Equal(t, min(tc.inFlight, len(tc.indexes)), x.most, "offers in negotiation at once")
			var want, lines []string
			for _, i := range tc.indexes {
				want = append(want, "r/"+strconv.Itoa(i))
				lines = append(lines, fmt.Sprintf("%d contract c-r-%d with gpu1", i, i))
			}
			// Each batch is the next inFlight indexes, in whatever order
			// their senders ran.
			got := slices.Clone(x.order)
			for b := 0; b < len(got); b += tc.inFlight {
				slices.Sort(got[b:min(len(got), b+tc.inFlight)])
				slices.Sort(want[b:min(len(want), b+tc.inFlight)])
			}
			assert.Equal(t, want, got, "each batch is the next indexes")
			assert.Equal(t, strings.Join(lines, "\n")+"\n", out.String()[:strings.LastIndex(out.String(), "watch one:")])
		})
	}
}

// TestArrayRateLimited: an offer the exchange refuses as rate_limited,
// more often than the bidder's own retries, is sent again under its
// request id until the exchange takes it: nothing of a refused request
// was done, and the array's every index makes its contract; from the
// first refusal on, one offer at a time.
func TestArrayRateLimited(t *testing.T) {
	ns := natstest.Start(t)
	// Each answer takes 20 ms: four offers would be outstanding at once
	// but for the refusals.
	x := &batchExchange{batch: 1, total: 10, refuse: 5, delay: 20 * time.Millisecond}
	x.serve(t, ns.ClientURL(), "ada")
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := run(ctx, []string{"bid", "--nats", ns.ClientURL(), "--id", "ada", "--timeout", "5s", "offer", "--price", "0.3",
		"--command", "/bin/true", "--array", "10", "--request-id", "r"}, &out, &errOut)
	require.Zero(t, code, "%s", errOut.String())
	assert.Equal(t, 10, strings.Count(out.String(), " contract c-r-"), out.String())
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range 10 {
		assert.Equal(t, 6, x.tries["r/"+strconv.Itoa(i)], "index %d: refused 5 times, then taken once", i)
	}
	assert.Equal(t, 1, x.most, "offers outstanding at once, every one after a refusal")
}
