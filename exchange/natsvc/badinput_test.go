package natsvc_test

import (
	"context"
	"encoding/json"
	"strings"
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

// TestBadInput sends malformed and unacceptable requests as raw JSON, the
// way any NATS client could, and checks each gets its typed error in the
// micro headers and body, and that the ledger did not move.
func TestBadInput(t *testing.T) {
	m := newMarket(t, nil)
	m.wallet("eve", "10")
	m.wallet("poor", "1")
	m.scriptedServer("gpu1", 2, accept)
	before := m.audit()
	conns := map[string]*nats.Conn{}
	conn := func(id string) *nats.Conn { // each client asks from its own inbox
		if conns[id] == nil {
			conns[id] = natstest.Connect(t, m.ns, protocol.InboxPrefix(id))
		}
		return conns[id]
	}
	offer := func(terms string) string {
		return `{"request_id":"r1","terms":` + terms + `}`
	}
	good := `{"currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`
	cases := []struct {
		name, client, body string
		code               bourse.Code
		field              string
	}{
		{"MalformedJSON", "eve", `{"request_id":`, bourse.EInvalid, ""},
		{"NotAnObject", "eve", `[1,2]`, bourse.EInvalid, ""},
		{"UnknownField", "eve", `{"request_id":"r1","bogus":1,"terms":` + good + `}`, bourse.EInvalid, ""},
		{"UnknownTermsField", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]],"colour":"red"}`), bourse.EInvalid, ""},
		{"TrailingData", "eve", offer(good) + `{}`, bourse.EInvalid, ""},
		{"NoRequestID", "eve", `{"terms":` + good + `}`, bourse.EInvalid, "request_id"},
		{"UnsortedCurve", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["1","0.01"],["0.5","0.02"]]}`), bourse.EInvalidCurve, "terms.p[1].x"},
		{"DecreasingCurve", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","0.02"],["1","0.01"]]}`), bourse.EInvalidCurve, ""},
		{"NaNPrice", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","NaN"]]}`), bourse.EInvalid, ""},
		{"BareNumberDuration", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":600,"prepayment":"6","p":[["0","0.01"]]}`), bourse.EInvalid, ""},
		{"UnknownCurrency", "eve", offer(`{"currency":"DOGE","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`), bourse.EUnknownCurrency, ""},
		{"AbsurdGPUs", "eve", offer(`{"currency":"CRED","gpus":1000000,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`), bourse.EInvalidOffer, "terms.gpus"},
		{"PrepaymentAboveMax", "eve", offer(`{"currency":"CRED","gpus":1,"time_limit":"1s","prepayment":"6","p":[["0","0.01"]]}`), bourse.EInvalidOffer, "terms.prepayment"},
		{"HugeBody", "eve", `{"request_id":"` + strings.Repeat("x", protocol.MaxMessage) + `"}`, bourse.EInvalid, ""},
		{"OtherClientsName", "eve", offer(`{"client":"poor","currency":"CRED","gpus":1,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`), bourse.EPermission, "terms.client"},
		{"NoAccount", "nobody", offer(good), bourse.ENotFound, "terms.client"},
		{"InsufficientFunds", "poor", offer(good), bourse.EInsufficientFunds, "terms.prepayment"},
		{"NoMatchingServer", "eve", offer(`{"currency":"CRED","gpus":3,"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`), bourse.ENoMatch, "terms.gpus"},
		{"NoSuchModel", "eve", offer(`{"currency":"CRED","gpus":1,"class":{"model":"TPU"},"time_limit":"10m","prepayment":"6","p":[["0","0.01"]]}`), bourse.ENoMatch, "terms.gpus"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Each case its own request id: an answered request id keeps
			// its answer for a minute (docs/protocol.md, "Idempotency").
			body := strings.Replace(c.body, `"request_id":"r1"`, `"request_id":"`+c.name+`"`, 1)
			msg, err := conn(c.client).Request(protocol.ClientSubject(c.client, protocol.VerbOffer), []byte(body), 3*time.Second)
			require.NoError(t, err)
			assert.Equal(t, string(c.code), msg.Header.Get(micro.ErrorCodeHeader), "body %s", msg.Data)
			assert.NotEmpty(t, msg.Header.Get(micro.ErrorHeader))
			var r protocol.ErrorReply
			require.NoError(t, json.Unmarshal(msg.Data, &r), "%s", msg.Data)
			require.NotNil(t, r.Error)
			assert.Equal(t, c.code, r.Error.Code)
			if c.field != "" {
				assert.Equal(t, c.field, r.Error.Field)
			}
		})
	}
	after := m.audit()
	assert.Equal(t, before.Movements, after.Movements, "bad input moved money")
	assert.Equal(t, 0, after.Holds)

	t.Run("BadControl", func(t *testing.T) {
		c := m.client("eve")
		_, err := c.Kill(context.Background(), "c-doesnotexist")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		_, err = c.Balance(context.Background(), "DOGE")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
	})
}
