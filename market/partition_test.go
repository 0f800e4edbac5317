package market_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/market"
)

// TestPartition cuts one NATS node of TestCluster's market off from the
// other two for cutFor and heals it, the partition of issue 45: the cut
// node has an exchange, a GPU server (atlas) and clients on it, trading
// throughout. The cut is real (natstest.StartProcsApart: each node in a
// network namespace of its own, every packet between the cut node and
// the others dropped; the routes, pinging every two minutes as by
// default, do not notice a cut this short), and a node's parties stay
// with it, as the machines of one rack do. During the cut the cut-off
// side has no JetStream quorum: its server's readings go to an exchange
// directly (receipts), and wait while that question goes over a dead
// route, and the exchange on its side records that it hears that
// server, so that the majority's exchanges, which do not, leave its
// contracts alone (without that, 7 contracts settled as server lost in
// a run). After
// the heal every contract made before, during and after the cut settles
// or voids, none as server lost; every charge is the price of its
// server's own final reading; every request id has the outcome its
// client was told; the audit is clean. A probe on each side offers to
// each server by name throughout: what the cut cost, logged as "fault:"
// lines, is what they saw, and the contracts that settled late.
func TestPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("runs nats-server and bourse exchange processes, in network namespaces")
	}
	nodes := natstest.StartProcsApart(t, 3)
	const cut = 0 // nats-1: atlas's node (market.Config.Nodes gives the first server the first node)
	sides := []struct {
		name, probe string
		node        int
	}{{"the cut-off side", "probe-cut", cut}, {"the majority", "probe-majority", cut + 1}}
	var wallets []market.Wallet
	for _, s := range sides {
		wallets = append(wallets, market.Wallet{ID: s.probe, Budget: dectest.D("1000")})
	}
	// Each exchange on a node of its own (a party given every node's URL
	// picks one at random), so that one is on the cut-off side.
	c := startClusterMarket(t, nodes, func(i int) string { return nodes.Nodes[i].URL() }, wallets)
	servers := []string{c.m.Servers[0].ID, c.m.Servers[1].ID}
	probes := make([]*probe, len(sides))
	for i, s := range sides {
		probes[i] = startProbe(t, nodes.Nodes[s.node].URL(), s.probe, c.m.Told, servers)
		for _, srv := range servers {
			probes[i].waitAccepted(srv, time.Now().Add(-time.Minute), time.Minute)
		}
	}
	time.Sleep(2 * time.Second) // trading under way

	before := c.m.Tally.Snapshot()
	began := time.Now()
	nodes.Cut(cut)
	time.Sleep(cutFor)
	nodes.Heal(cut)
	healed := time.Now()
	during := c.m.Tally.Snapshot()
	waitStreamHealthy(t, c.js, 3, time.Minute)
	for _, p := range probes {
		for _, srv := range servers {
			p.waitAccepted(srv, healed, 30*time.Second)
		}
	}
	closed := waitEnded(t, c.store, parties(c.m), healed, time.Minute)
	name := fmt.Sprintf("%s cut off from the other NATS nodes for %v, with %s and an exchange on it", nodes.Nodes[cut].Name, cutFor, servers[0])
	for i, s := range sides {
		for _, srv := range servers {
			t.Logf("fault: %s: offers from %s to %s: %s", name, s.name, srv, probes[i].during(srv, began, healed))
		}
	}
	t.Logf("fault: %s: the bidders' errors %v; settled %d → %d during the cut; contracts made before the heal all ended %v after it",
		name, errorsSince(before, during), before.SettledTotal(), during.SettledTotal(), closed.Round(10*time.Millisecond))
	made := lateness(t, c, began, healed, name)
	assert.Positive(t, made[servers[1]], "the majority made no contract on %s during the cut", servers[1])

	time.Sleep(3 * time.Second) // trading after the heal
	for _, p := range probes {
		p.stop()
	}
	c.finish()
}

// cutFor is how long TestPartition's cut lasts: twice the exchanges'
// server_lost_after (10 s), so that the majority must judge the cut-off
// server's silence.
const cutFor = 20 * time.Second

// lateness logs how many contracts each server made during the cut
// (from began to healed), and how many of those made before the heal
// settled late, more than settledLate after their servers' final
// readings, and the latest; it returns the contracts made during the cut
// by server.
func lateness(t *testing.T, c *clusterMarket, began, healed time.Time, name string) map[string]int {
	t.Helper()
	made, late := map[string]int{}, map[string]int{}
	lag := map[string]time.Duration{}
	for _, id := range parties(c.m) {
		cs, err := c.store.Contracts(context.Background(), id, 0)
		require.NoError(t, err)
		for _, k := range cs {
			if !k.AcceptedAt.Before(began) && k.AcceptedAt.Before(healed) {
				made[k.Server]++
			}
			final, ok := c.m.Final(k.ID)
			if k.State != contract.StateSettled || !k.AcceptedAt.Before(healed) || !ok {
				continue
			}
			d := k.SettledAt.Sub(final.At)
			lag[k.Server] = max(lag[k.Server], d)
			if d > settledLate {
				late[k.Server]++
			}
		}
	}
	for srv, n := range made {
		t.Logf("fault: %s: %d contracts made on %s during the cut; of those made before the heal, %d settled more than %v after their final readings, the latest %v after",
			name, n, srv, late[srv], settledLate, lag[srv].Round(10*time.Millisecond))
	}
	return made
}

// settledLate is how long after its final reading a contract settles
// late: one whose reading goes the usual way, through the stream,
// settles within milliseconds.
const settledLate = time.Second
