package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/agent"
)

// TestFinalSentAgainAfterNATSRestart: Debian's nats-server 2.9 (the one
// the README installs) acknowledges readings that reach it while it shuts
// down, and drops some of them on the usage stream, whose retention is by
// interest (market's TestFaults lost a contract's final reading so, and
// the contract settled as server_lost on an earlier one). The test drops
// an acknowledged final reading from the stream as that server does, and
// restarts NATS: the agent sends the final reading again once it is
// back, under its message id.
func TestFinalSentAgainAfterNATSRestart(t *testing.T) {
	for _, withOutbox := range []bool{false, true} {
		name := "no outbox"
		if withOutbox {
			name = "outbox"
		}
		t.Run(name, func(t *testing.T) {
			x := newExchange(t, setup{})
			cfg := agent.Config{NATSOptions: []nats.Option{nats.ReconnectWait(20 * time.Millisecond)}}
			if withOutbox {
				cfg.OutboxDir = t.TempDir()
			}
			x.startAgent("gpu1", cfg)
			_, err := x.start("gpu1", "o1", "c1", terms(1, 10*time.Second, "0.001", "0.01", "1", 200*time.Millisecond))
			require.NoError(t, err)
			var final contract.Reading
			require.Eventually(t, func() bool {
				rds := x.all("gpu1", "c1")
				if len(rds) == 0 || !rds[len(rds)-1].Final {
					return false
				}
				final = rds[len(rds)-1]
				return true
			}, 5*time.Second, 20*time.Millisecond, "no final reading")

			x.drop("gpu1", "c1", final.Seq)
			require.Empty(t, finalsOf(x.all("gpu1", "c1")), "the final reading is still in the stream")
			x.restartNATS()
			require.Eventually(t, func() bool { return len(finalsOf(x.all("gpu1", "c1"))) > 0 },
				5*time.Second, 50*time.Millisecond, "the final reading was not sent again")
			again := finalsOf(x.all("gpu1", "c1"))
			require.Len(t, again, 1)
			assert.Equal(t, final, again[0])
		})
	}
}

func finalsOf(rds []contract.Reading) []contract.Reading {
	var out []contract.Reading
	for _, rd := range rds {
		if rd.Final {
			out = append(out, rd)
		}
	}
	return out
}

// drop deletes the reading seq of a contract from the usage stream, as
// nats-server 2.9 loses one it acknowledged while shutting down.
func (x *exchange) drop(id, contractID string, seq uint64) {
	x.t.Helper()
	ctx := context.Background()
	cons, err := x.js.OrderedConsumer(ctx, protocol.UsageStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{protocol.UsageSubject(id, contractID)}})
	require.NoError(x.t, err)
	stream, err := x.js.Stream(ctx, protocol.UsageStream)
	require.NoError(x.t, err)
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(300 * time.Millisecond))
		require.NoError(x.t, err, "reading %d of %s is not in the stream", seq, contractID)
		var rd contract.Reading
		require.NoError(x.t, json.Unmarshal(m.Data(), &rd))
		if rd.Seq != seq {
			continue
		}
		md, err := m.Metadata()
		require.NoError(x.t, err)
		require.NoError(x.t, stream.DeleteMsg(ctx, md.Sequence.Stream))
		return
	}
}
