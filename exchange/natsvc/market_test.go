package natsvc_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"sync/atomic"

	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/currency/mem"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/memstore"
	"github.com/bourse/bourse/exchange/natsvc"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

const cred = "CRED"

// market is an exchange on an embedded NATS server and a store.
type market struct {
	t      testing.TB
	ns     *server.Server
	ledger currency.Ledger
	store  exchange.Store
	cfg    natsvc.Config
	ex     *natsvc.Service
	exStop func() // stops ex
}

// newMarket is a market on an in-memory store.
func newMarket(t testing.TB, tune func(*exchange.Config)) *market {
	t.Helper()
	return newMarketOn(t, memstore.New(mem.New(mem.Options{})), tune)
}

// newMarketOn is a market on store, whose ledger must be empty.
func newMarketOn(t testing.TB, store exchange.Store, tune func(*exchange.Config)) *market {
	t.Helper()
	m := &market{t: t, ns: natstest.Start(t), ledger: store.Ledger(), store: store}
	require.NoError(t, m.ledger.CreateCurrency(context.Background(), currency.Currency{Code: cred, Scale: 2}))
	m.cfg = natsvc.Config{Conn: natstest.Connect(t, m.ns, ""), Config: exchange.Config{
		Store:       m.store,
		Negotiation: time.Second, ReadingEvery: 50 * time.Millisecond, Heartbeat: 50 * time.Millisecond,
		ServerLostAfter: 2 * time.Second, SweepEvery: 50 * time.Millisecond, StartTimeout: 2 * time.Second,
		// The lifecycle tests publish readings of minutes right after the
		// start; the adversarial suite tunes this back to the default.
		ClockSkew: time.Hour,
	}}
	if tune != nil {
		tune(&m.cfg.Config)
	}
	m.startExchange()
	return m
}

// startExchange starts an exchange instance on the market's store and
// configuration, stopped when the test ends or when the caller calls the
// function it returns, whichever comes first.
func (m *market) startExchange() (stop func()) {
	m.t.Helper()
	ex, err := natsvc.Start(context.Background(), m.cfg)
	require.NoError(m.t, err)
	var once sync.Once
	stop = func() { once.Do(ex.Stop) }
	m.t.Cleanup(stop)
	m.ex, m.exStop = ex, stop
	return stop
}

// wallet opens a funded wallet for client id.
func (m *market) wallet(id, funds string) {
	m.t.Helper()
	ctx := context.Background()
	w, err := m.ledger.OpenAccount(ctx, currency.Account{ID: currency.WalletID(cred, id), Currency: cred, Kind: currency.Wallet})
	require.NoError(m.t, err)
	if funds != "0" {
		_, err = currency.Do(ctx, m.ledger, currency.Transfer{Key: "grant/" + id, From: currency.IssuanceID(cred), To: w.ID, Amount: decimal.RequireFromString(funds)})
		require.NoError(m.t, err)
	}
}

func (m *market) client(id string) *bidder.Client {
	m.t.Helper()
	c, err := bidder.Dial(bidder.Config{ID: id, Conn: natstest.Connect(m.t, m.ns, protocol.InboxPrefix(id)), Timeout: 3 * time.Second})
	require.NoError(m.t, err)
	return c
}

func (m *market) balance(id currency.AccountID) currency.Balance {
	m.t.Helper()
	b, err := m.ledger.Balance(context.Background(), id)
	require.NoError(m.t, err)
	return b
}

func (m *market) audit() currency.Report {
	m.t.Helper()
	r, err := m.ledger.Audit(context.Background())
	require.NoError(m.t, err)
	require.True(m.t, r.OK(), "%s", r)
	return r
}

// terms is a one-GPU offer at 0.01 per GPU-second, up to 10 minutes.
func terms(client string) contract.Terms {
	return contract.Terms{
		Client: client, Currency: cred, GPUs: 1, TimeLimit: 10 * time.Minute,
		Prepayment: dectest.D("6"), P: contract.Flat(dectest.D("0.01")),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Second}},
	}
}

// scripted is a GPU server played by the test over the raw protocol, so
// that the exchange is tested through its wire and nothing else.
type scripted struct {
	t      testing.TB
	id     string
	nc     *nats.Conn
	js     jetstream.JetStream
	decide func(protocol.ServerOffer) protocol.Decision
	gpus   []contract.GPU
	starts chan protocol.Start
	ctrl   chan protocol.Control
	// muteStarts leaves start requests unanswered, like a server that hung.
	muteStarts atomic.Bool
	// sign, if set, signs its accepts (setSign).
	sign atomic.Pointer[func([]byte) string]
	// muteOffers leaves offers unanswered, like a server that never
	// decides: each holds a negotiation until it times out.
	muteOffers atomic.Bool
	// books answers starts as a server taking bookings does: booked, to
	// start at the terms' start_at.
	books atomic.Bool
	// declare, if set, is what its starts declare of the output they
	// will send (protocol.Started.Output).
	declare atomic.Pointer[contract.OutputCaps]
}

func (m *market) scriptedServer(id string, gpus int, decide func(protocol.ServerOffer) protocol.Decision) *scripted {
	return m.scriptedRunning(id, gpus, nil, decide)
}

// scriptedRunning is a scripted server that says it runs runs.
func (m *market) scriptedRunning(id string, gpus int, runs *protocol.Runs, decide func(protocol.ServerOffer) protocol.Decision) *scripted {
	m.t.Helper()
	return m.scriptedWith(id, gpus, func(h *protocol.Hello) { h.Runs = runs }, decide)
}

// scriptedWith is a scripted server whose hello says what say adds.
func (m *market) scriptedWith(id string, gpus int, say func(*protocol.Hello), decide func(protocol.ServerOffer) protocol.Decision) *scripted {
	t := m.t
	t.Helper()
	nc := natstest.Connect(t, m.ns, protocol.InboxPrefix(id))
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	var gs []contract.GPU
	for i := range gpus {
		gs = append(gs, contract.GPU{Index: i, Model: "H100", MemoryMiB: 81920})
	}
	s := &scripted{t: t, id: id, nc: nc, js: js, decide: decide, gpus: gs, starts: make(chan protocol.Start, 16), ctrl: make(chan protocol.Control, 16)}
	hello := protocol.Hello{Currency: cred, GPUs: gs, Free: gpus, At: time.Now().UTC()}
	say(&hello)
	body, _ := json.Marshal(hello)
	msg, err := nc.Request(protocol.ServerSubject(id, protocol.VerbHello), body, 2*time.Second)
	require.NoError(t, err)
	require.NoError(t, natswire.DecodeError(msg))
	s.sub(protocol.DeliverOffer, func(m *nats.Msg) {
		var o protocol.ServerOffer
		require.NoError(t, json.Unmarshal(m.Data, &o))
		if s.muteOffers.Load() {
			return
		}
		d := s.decide(o)
		reply, _ := json.Marshal(d)
		if sign := s.sign.Load(); sign != nil && *sign != nil && d.Accept {
			r := nats.NewMsg(m.Reply)
			r.Data = reply
			r.Header.Set(protocol.SigHeader, (*sign)(protocol.AcceptSigned(m.Data, reply)))
			_ = m.RespondMsg(r)
			return
		}
		_ = m.Respond(reply)
	})
	s.sub(protocol.DeliverStart, func(m *nats.Msg) {
		var st protocol.Start
		require.NoError(t, json.Unmarshal(m.Data, &st))
		if s.muteStarts.Load() {
			return
		}
		s.starts <- st
		started := protocol.Started{Contract: st.Contract.ID, GPUs: []int{0}, At: time.Now().UTC()}
		if s.books.Load() {
			started.At, started.Booked = st.Contract.Terms.StartAt, true
		}
		if caps := s.declare.Load(); caps != nil {
			started.Output = *caps
		}
		reply, _ := json.Marshal(started)
		_ = m.Respond(reply)
	})
	s.sub(protocol.DeliverControl, func(m *nats.Msg) {
		var c protocol.Control
		require.NoError(t, json.Unmarshal(m.Data, &c))
		s.ctrl <- c
		_ = m.Respond([]byte("{}"))
	})
	s.sub(protocol.DeliverCancel, func(*nats.Msg) {})
	require.NoError(t, nc.Flush())
	return s
}

func (s *scripted) sub(verb string, h nats.MsgHandler) {
	_, err := s.nc.Subscribe(protocol.DeliverSubject(s.id, verb), h)
	require.NoError(s.t, err)
}

// publish sends a reading as a server must: to JetStream, with its msg id.
func (s *scripted) publish(r contract.Reading) {
	s.t.Helper()
	body, _ := json.Marshal(r)
	_, err := s.js.Publish(context.Background(), protocol.UsageSubject(s.id, r.Contract), body, jetstream.WithMsgID(protocol.MsgID(s.id, r)))
	require.NoError(s.t, err)
}

func accept(protocol.ServerOffer) protocol.Decision {
	return protocol.Decision{Accept: true, ClaimFor: contract.Duration(5 * time.Second)}
}

// waitFor polls until cond holds or fails the test after 5 seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// contractIDOf is the id of the contract that client's request id names,
// as docs/protocol.md ("Idempotency") derives it.
func contractIDOf(client, requestID string) string {
	h := sha256.Sum256([]byte(client + "\x00" + requestID))
	return "c-" + hex.EncodeToString(h[:10])
}

func reading(id string, seq uint64, u string, secs int, final bool) contract.Reading {
	r := contract.Reading{Contract: id, Seq: seq, U: dectest.D(u), T: contract.Duration(time.Duration(secs) * time.Second), S: dectest.D("1"), At: time.Now().UTC(), Final: final}
	if final {
		r.Reason = contract.ReasonCompleted
	}
	return r
}
