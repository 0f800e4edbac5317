package market_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
)

// checkTold holds every request id a client sent to what it was told:
// told a contract, the store has that contract under the id the request
// names; told none (counter-offers, rejections, or an error given only
// when nothing was made), the store has no contract under it. And the
// store has no contract of a client that no request of its names. A
// request that got no answer after the bidder's retries says nothing
// either way; they are counted and logged.
func checkTold(t *testing.T, m *market.Market, store exchange.Store) {
	t.Helper()
	ctx := context.Background()
	requests, contracts, unheard, unheardMade := 0, 0, 0, 0
	for _, client := range parties(m) {
		told := m.Told.Of(client)
		named := map[string]bool{}
		for rid, a := range told {
			requests++
			id := contractIDOf(client, rid)
			named[id] = true
			k, err := store.Contract(ctx, id)
			switch {
			case a.Contract != "":
				contracts++
				assert.Equal(t, id, a.Contract, "%s's request %s: told contract %s", client, rid, a.Contract)
				if assert.NoError(t, err, "%s's request %s: told contract %s, which the store does not have", client, rid, a.Contract) {
					assert.Equal(t, client, k.Client, "%s's request %s", client, rid)
				}
			case a.Heard():
				assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err),
					"%s's request %s: told no contract (%q), but the store has %s (%v)", client, rid, a.Code, id, err)
			default:
				unheard++
				if unheard <= 5 {
					t.Logf("%s's request %s got no answer: %s", client, rid, a.Message)
				}
				if err == nil {
					unheardMade++
				}
			}
		}
		all, err := store.Contracts(ctx, client, 0)
		require.NoError(t, err)
		for _, k := range all {
			assert.True(t, named[k.ID], "%s's contract %s: no request of its names it", client, k.ID)
		}
	}
	t.Logf("%d request ids: %d told a contract, %d told none, %d without an answer (%d of which made a contract)",
		requests, contracts, requests-contracts-unheard, unheard, unheardMade)
	assert.Positive(t, contracts)
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// jetStreamOn is a JetStream client of the test's own, on every node.
func jetStreamOn(t *testing.T, nodes *natstest.Procs) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(nodes.URLs(2), nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

// streamCluster is the usage stream's leader and replicas as JetStream
// reports them (`nats stream info BOURSE_USAGE`), or an error.
func streamCluster(js jetstream.JetStream) (*jetstream.ClusterInfo, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, protocol.UsageStream)
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, err
	}
	if info.Cluster == nil {
		return nil, errors.New("no cluster information")
	}
	return info.Cluster, nil
}

// waitStreamHealthy waits until the usage stream has a leader and every
// other of its replicas is current, as a rolling restart does before
// it restarts the next node, and returns the leader's name.
func waitStreamHealthy(t *testing.T, js jetstream.JetStream, replicas int, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	why := ""
	for time.Now().Before(deadline) {
		c, err := streamCluster(js)
		switch {
		case err != nil:
			why = err.Error()
		case c.Leader == "":
			why = "no leader"
		case len(c.Replicas) != replicas-1:
			why = fmt.Sprintf("%d replicas beside the leader", len(c.Replicas))
		default:
			why = ""
			for _, r := range c.Replicas {
				if !r.Current || r.Offline {
					why = fmt.Sprintf("replica %s not current (offline %v, lag %d, last seen %v ago)", r.Name, r.Offline, r.Lag, r.Active)
				}
			}
			if why == "" {
				return c.Leader
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the usage stream is not healthy within %v: %s", within, why)
	return ""
}

// waitStreamLeader waits until a node other than old leads the stream.
func waitStreamLeader(t *testing.T, js jetstream.JetStream, old string, within time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if c, err := streamCluster(js); err == nil && c.Leader != "" && c.Leader != old {
			return c.Leader
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no new leader of the usage stream within %v of %s's death", within, old)
	return ""
}

// waitInFlight waits until exchange ex handles at least one request (its
// bourse_exchange_in_flight gauge) and returns how many.
func waitInFlight(t *testing.T, ex *exchangeProc, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if n := gauge(t, ex.metrics, "bourse_exchange_in_flight"); n > 0 {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s took no request within %v", ex.name, within)
	return 0
}

// gauge reads one unlabelled metric from a Prometheus endpoint.
func gauge(t *testing.T, addr, name string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			return int(f)
		}
	}
	t.Fatalf("%s has no %s", addr, name)
	return 0
}
