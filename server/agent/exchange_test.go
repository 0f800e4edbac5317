package agent_test

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server/agent"
)

// every is the interval the fake exchange asks servers to speak at.
const every = 50 * time.Millisecond

// startNATS runs an embedded NATS server with JetStream in storeDir, on a
// free port or the one given.
func startNATS(t testing.TB, port int, storeDir string) *natsserver.Server {
	t.Helper()
	return natstest.StartWith(t, &natsserver.Options{Port: port, StoreDir: storeDir, NoLog: true})
}

// exchange plays the exchange's side of the protocol over raw NATS.
type exchange struct {
	t     testing.TB
	ns    *natsserver.Server
	store string // the JetStream directory, kept across restarts
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	hello chan protocol.Hello
	beats chan protocol.Hello
	// readingsMsgs: its stream takes readings messages (setup.readings).
	readingsMsgs bool
	readingEvery time.Duration
	receipts     bool
	changeGap    time.Duration
}

// setup says what newExchange leaves out or adds.
type setup struct {
	noStream bool // create no usage stream
	noHello  bool // answer no hellos
	// shipped runs NATS with docs/nats-server.conf, whose users have only
	// the permissions of their role; the exchange is user "exchange".
	shipped bool
	// readings: the hello reply says that the usage stream takes
	// readings messages, and it does (an exchange of today; the others
	// play one older than them).
	readings bool
	// readingEvery is the reading interval the hello reply gives, every
	// if zero.
	readingEvery time.Duration
	// receipts: the hello reply says that the exchange gives receipts
	// (the test answers the agent's questions itself: onReceipts).
	receipts bool
	// changeGap: the hello reply sets it (an exchange that paces
	// heartbeats); zero plays one older than pacing.
	changeGap time.Duration
}

// newExchange starts NATS, creates the usage stream, answers hellos and
// collects heartbeats.
func newExchange(t testing.TB, s setup) *exchange {
	t.Helper()
	store := t.TempDir()
	var ns *natsserver.Server
	opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(20 * time.Millisecond)}
	if s.shipped {
		_, file, _, _ := runtime.Caller(0)
		conf, err := natsserver.ProcessConfigFile(filepath.Join(filepath.Dir(file), "..", "..", "docs", "nats-server.conf"))
		require.NoError(t, err)
		conf.Port, conf.StoreDir, conf.NoLog = natsserver.RANDOM_PORT, store, true
		ns = natstest.StartWith(t, conf)
		opts = append(opts, nats.UserInfo("exchange", "exchange-secret"))
	} else {
		ns = startNATS(t, natsserver.RANDOM_PORT, store)
	}
	url := ns.ClientURL()
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	x := &exchange{t: t, ns: ns, store: store, url: url, nc: nc, js: js, readingsMsgs: s.readings, readingEvery: cmp.Or(s.readingEvery, every), receipts: s.receipts, changeGap: s.changeGap,
		hello: make(chan protocol.Hello, 16), beats: make(chan protocol.Hello, 1024)}
	if !s.noStream {
		x.createStream()
	}
	if !s.noHello {
		x.answerHello()
	}
	_, err = nc.Subscribe(protocol.ServerSubject("*", protocol.VerbHeartbeat), func(m *nats.Msg) {
		var h protocol.Hello
		if json.Unmarshal(m.Data, &h) == nil {
			select {
			case x.beats <- h:
			default:
			}
		}
	})
	require.NoError(t, err)
	return x
}

func (x *exchange) answerHello() {
	_, err := x.nc.Subscribe(protocol.ServerSubject("*", protocol.VerbHello), func(m *nats.Msg) {
		var h protocol.Hello
		if json.Unmarshal(m.Data, &h) == nil {
			x.hello <- h
		}
		x.respond(m, protocol.HelloReply{Heartbeat: contract.Duration(every), ReadingEvery: contract.Duration(x.readingEvery),
			ServerLostAfter: contract.Duration(10 * every), Readings: x.readingsMsgs, Receipts: x.receipts, ChangeGap: contract.Duration(x.changeGap)})
	})
	require.NoError(x.t, err)
}

// restartNATS stops the NATS server and starts another on the same port
// and JetStream directory, as an operator's restart would.
func (x *exchange) restartNATS() {
	x.t.Helper()
	port := x.ns.Addr().(*net.TCPAddr).Port
	x.ns.Shutdown()
	x.ns.WaitForShutdown()
	x.ns = startNATS(x.t, port, x.store)
	require.Eventually(x.t, x.nc.IsConnected, 5*time.Second, 10*time.Millisecond, "the exchange did not reconnect")
}

func (x *exchange) createStream() {
	subjects := []string{protocol.UsageSubjects}
	if x.readingsMsgs {
		subjects = append(subjects, protocol.ReadingsSubjects)
	}
	_, err := x.js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: protocol.UsageStream, Subjects: subjects,
	})
	require.NoError(x.t, err)
}

// respond answers from a subscription's goroutine, where require may not
// stop the test.
func (x *exchange) respond(m *nats.Msg, v any) {
	data, err := json.Marshal(v)
	if err == nil {
		err = m.Respond(data)
	}
	if err != nil {
		x.t.Errorf("respond to %s: %v", m.Subject, err)
	}
}

// running is a running server agent and the way to stop it.
type running struct {
	id   string
	stop context.CancelFunc
	done chan error
}

// gpus are four H100s.
var gpus = []contract.GPU{
	{Index: 0, Model: "H100", MemoryMiB: 81920}, {Index: 1, Model: "H100", MemoryMiB: 81920},
	{Index: 2, Model: "H100", MemoryMiB: 81920}, {Index: 3, Model: "H100", MemoryMiB: 81920},
}

// startAgent runs an agent named id with cfg's policy and GPUs (four H100s
// by default) and waits for its hello and its first heartbeat, which
// follows the agent's adopting the intervals of the hello's reply.
func (x *exchange) startAgent(id string, cfg agent.Config) *running {
	x.t.Helper()
	ag := x.runAgent(id, cfg)
	select {
	case h := <-x.hello:
		require.Equal(x.t, "GPU", h.Currency)
	case <-time.After(5 * time.Second):
		x.t.Fatal("no hello")
	}
	select {
	case <-x.beats:
	case <-time.After(5 * time.Second):
		x.t.Fatal("no heartbeat")
	}
	return ag
}

// runAgent runs an agent without waiting for its hello.
func (x *exchange) runAgent(id string, cfg agent.Config) *running {
	x.t.Helper()
	cfg.URL, cfg.ID = x.url, id
	cfg.Currency = currency.Currency{Code: "GPU", Scale: 2}
	if cfg.GPUs == nil {
		cfg.GPUs = gpus
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
		if testing.Verbose() {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	a, err := agent.New(cfg)
	require.NoError(x.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ag := &running{id: id, stop: cancel, done: make(chan error, 1)}
	go func() { ag.done <- a.Run(ctx) }()
	x.t.Cleanup(func() {
		cancel()
		select {
		case <-ag.done:
		case <-time.After(10 * time.Second):
			x.t.Error("the agent did not stop")
		}
	})
	return ag
}

// shutdown stops the agent and returns what Run returned.
func (ag *running) shutdown(t testing.TB) error {
	t.Helper()
	ag.stop()
	select {
	case err := <-ag.done:
		ag.done <- err // for the cleanup
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func (x *exchange) request(subject string, v any) *nats.Msg {
	x.t.Helper()
	data, err := json.Marshal(v)
	require.NoError(x.t, err)
	m, err := x.nc.Request(subject, data, 2*time.Second)
	require.NoError(x.t, err, subject)
	return m
}

func (x *exchange) offer(id string, so protocol.ServerOffer) protocol.Decision {
	x.t.Helper()
	m := x.request(protocol.DeliverSubject(id, protocol.DeliverOffer), so)
	var dec protocol.Decision
	require.NoError(x.t, json.Unmarshal(m.Data, &dec), string(m.Data))
	return dec
}

// start starts a contract and returns the reply: a Started or an error.
func (x *exchange) start(id, offer, contractID string, t contract.Terms) (protocol.Started, error) {
	x.t.Helper()
	m := x.request(protocol.DeliverSubject(id, protocol.DeliverStart),
		protocol.Start{Offer: offer, Contract: protocol.ContractView{ID: contractID, Client: t.Client, Server: id, Terms: t, State: contract.StateAccepted}})
	if err := natswire.DecodeError(m); err != nil {
		return protocol.Started{}, err
	}
	var s protocol.Started
	require.NoError(x.t, json.Unmarshal(m.Data, &s), string(m.Data))
	return s, nil
}

func (x *exchange) control(id, contractID string, action contract.Reason) *nats.Msg {
	x.t.Helper()
	return x.request(protocol.DeliverSubject(id, protocol.DeliverControl), protocol.Control{Contract: contractID, Action: action})
}

// readings follows the usage readings of one contract.
type readings struct {
	t    testing.TB
	cons jetstream.Consumer
}

func (x *exchange) readings(id, contractID string) *readings {
	x.t.Helper()
	cons, err := x.js.OrderedConsumer(context.Background(), protocol.UsageStream,
		jetstream.OrderedConsumerConfig{FilterSubjects: []string{protocol.UsageSubject(id, contractID)}})
	require.NoError(x.t, err)
	return &readings{t: x.t, cons: cons}
}

// next returns the next reading and its message id.
func (r *readings) next() (contract.Reading, string) {
	r.t.Helper()
	m, err := r.cons.Next(jetstream.FetchMaxWait(3 * time.Second))
	require.NoError(r.t, err, "no reading")
	var rd contract.Reading
	require.NoError(r.t, json.Unmarshal(m.Data(), &rd))
	return rd, m.Headers().Get(jetstream.MsgIDHeader)
}

// final skips to the final reading, checking that sequence numbers and
// message ids follow each other on the way, and returns it.
func (r *readings) final(after uint64) contract.Reading {
	r.t.Helper()
	for {
		rd, id := r.next()
		require.Equal(r.t, after+1, rd.Seq)
		require.Equal(r.t, protocol.MsgID("gpu1", rd), id)
		after = rd.Seq
		if rd.Final {
			return rd
		}
	}
}

// terms asks for g H100s for limit at price per GPU-second, with a
// synthetic job busy util of the time for length.
func terms(g int, limit time.Duration, price, prepayment, util string, length time.Duration) contract.Terms {
	return contract.Terms{
		Client: "alice", Currency: "GPU", GPUs: g, Class: contract.Class{Model: "H100"},
		TimeLimit: limit, Prepayment: decimal.RequireFromString(prepayment),
		P:   contract.Flat(decimal.RequireFromString(price)),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: decimal.RequireFromString(util), Duration: length}},
	}
}
