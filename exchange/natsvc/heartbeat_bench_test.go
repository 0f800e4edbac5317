package natsvc

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/signing"
)

// BenchmarkHeartbeat is one heartbeat heard, from the message on: what
// handleHeartbeat spends on each of a thousand servers' heartbeats
// (8 H100s, a posted price's ask, as BenchmarkServers' agents say them),
// with the rate limits on (the default), unsigned and with the asks
// signed and checked (an exchange with --server-keys). NATS's delivery
// is not in it. heard=full: each heartbeat says something other than
// its server's last (decoded, checked, its signature verified);
// heard=echo: each says what the last said, at a later time (heard by
// its time alone, heartbeat.go), as an idle server's do.
//
//	go test -run '^$' -bench BenchmarkHeartbeat -benchmem -cpuprofile cpu.out ./exchange/natsvc
func BenchmarkHeartbeat(b *testing.B) {
	for _, signed := range []bool{false, true} {
		for _, echo := range []bool{false, true} {
			name := fmt.Sprintf("signed=%v/heard=full", signed)
			if echo {
				name = fmt.Sprintf("signed=%v/heard=echo", signed)
			}
			b.Run(name, func(b *testing.B) { benchHeartbeat(b, signed, echo) })
		}
	}
}

func benchHeartbeat(b *testing.B, signed, echo bool) {
	const servers = 1000
	rig := newBeatRig(b, servers, signed, 0)
	// Two heartbeats a server, which say other things (their policies'
	// names) unless echo.
	msgs := make([]*nats.Msg, 2*servers)
	for i, id := range rig.ids {
		h := rig.nodes[id].Hello(rig.Now())
		for k, policy := range []string{"a", "b"} {
			if !echo {
				h.Policy = policy
			}
			msgs[k*servers+i] = rig.msg(id, h, signed)
		}
	}
	for _, m := range msgs { // every server heard once: an echo is of a heartbeat heard
		rig.s.handleHeartbeat(m)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		rig.s.handleHeartbeat(msgs[i%len(msgs)])
	}
	b.StopTimer()
	b.ReportMetric(float64(len(msgs[0].Data)), "bytes/heartbeat")
}

// beatRig is a Service on an embedded NATS server and the memory store,
// on a clock the test sets (now), with servers that said hello, and
// their keys where signed.
type beatRig struct {
	tb      testing.TB
	s       *Service
	mu      sync.Mutex // now is read by the service's goroutines, moved by the test's
	now     time.Time
	ids     []string
	nodes   map[string]*server.Node
	signers map[string]signing.Signer
}

// Now is the rig's clock.
func (r *beatRig) Now() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

// advance moves the rig's clock on by d.
func (r *beatRig) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
}

func newBeatRig(tb testing.TB, servers int, signed bool, perSecond int) *beatRig {
	ctx := context.Background()
	ns := natstest.Start(tb)
	nc := natstest.Connect(tb, ns, "")
	cur := currency.Currency{Code: "CRED", Scale: 2}
	store := memstore.New(mem.New(mem.Options{}))
	require.NoError(tb, store.Ledger().CreateCurrency(ctx, cur))
	rig := &beatRig{tb: tb, now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC),
		nodes: map[string]*server.Node{}, signers: map[string]signing.Signer{}}
	clock := rig.Now
	var keyLines strings.Builder
	dir := tb.TempDir()
	for i := range servers {
		id := fmt.Sprintf("s%04d", i)
		rig.ids = append(rig.ids, id)
		if signed {
			seed, pub, err := signing.NewKey()
			require.NoError(tb, err)
			f := filepath.Join(dir, id)
			require.NoError(tb, os.WriteFile(f, seed, 0o600))
			rig.signers[id], err = signing.LoadSigner(f)
			require.NoError(tb, err)
			fmt.Fprintf(&keyLines, "%s %s\n", id, pub)
		}
	}
	keys, err := signing.ReadKeys(strings.NewReader(keyLines.String()))
	require.NoError(tb, err)
	cfg := Config{Conn: nc, Config: exchange.Config{Store: store, Now: clock, HeartbeatsPerSecond: perSecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	if signed {
		cfg.Verifier = keys
	}
	s, err := Start(ctx, cfg)
	require.NoError(tb, err)
	tb.Cleanup(s.Stop)
	rig.s = s
	gpus := make([]contract.GPU, 8)
	for g := range gpus {
		gpus[g] = contract.GPU{Index: g, Model: "H100", MemoryMiB: 81920}
	}
	for _, id := range rig.ids {
		node, err := server.NewNode(server.NodeConfig{ID: id, Currency: cur, GPUs: gpus,
			Policy: server.Posted{P: contract.Flat(dectest.D("0.001"))}, Runner: &server.Synthetic{Now: clock}})
		require.NoError(tb, err)
		rig.nodes[id] = node
		_, err = s.house.Hello(ctx, id, node.Hello(rig.Now()))
		require.NoError(tb, err)
	}
	require.Equal(tb, servers, s.LiveServers())
	return rig
}

// msg is h as server id's heartbeat, signed with its key where sign.
func (rig *beatRig) msg(id string, h protocol.Hello, sign bool) *nats.Msg {
	data, err := protocol.Marshal(h)
	require.NoError(rig.tb, err)
	m := nats.NewMsg(protocol.ServerSubject(id, protocol.VerbHeartbeat))
	m.Data = data
	if sign {
		sig, err := rig.signers[id].Sign(data)
		require.NoError(rig.tb, err)
		m.Header.Set(protocol.SigHeader, sig)
	}
	return m
}
