package market_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/protocol"
)

// probe is a client that offers a small job to each server by name,
// throughout a fault test: one offer a second while they are accepted,
// one every probeEvery while none has been for a second, each under a
// request id of its own and without retries. It keeps when each went out,
// when its answer came and what it was: what a client sees of a fault,
// to a quarter of a second. What it is told goes to the market's Told.
type probe struct {
	t      *testing.T
	id     string
	c      *bidder.Client
	told   *market.Told
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	tries map[string][]try // by server
}

// try is one of the probe's offers.
type try struct {
	sent, answered time.Time
	accepted       bool
	code           bourse.Code // the error's, or "rejected"/"countered" without one
	why            string      // the error's message, or a rejection's reason
}

const probeEvery = 250 * time.Millisecond

// startProbe connects client id and starts probing each server.
func startProbe(t *testing.T, url, id string, told *market.Told, servers []string) *probe {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(id, id+"-secret"), nats.CustomInboxPrefix(protocol.InboxPrefix(id)),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := bidder.Dial(bidder.Config{ID: id, Conn: nc, Timeout: 3 * time.Second, Retries: -1})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p := &probe{t: t, id: id, c: c, told: told, cancel: cancel, tries: map[string][]try{}}
	for _, s := range servers {
		p.wg.Go(func() { p.run(ctx, s) })
	}
	t.Cleanup(p.stop)
	return p
}

// run offers to server until ctx ends.
func (p *probe) run(ctx context.Context, server string) {
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	var lastOK time.Time
	var mu sync.Mutex
	var inFlight sync.WaitGroup
	defer inFlight.Wait()
	for n := 0; ; n++ {
		mu.Lock()
		due := time.Since(lastOK) >= time.Second
		mu.Unlock()
		if due {
			rid := fmt.Sprintf("probe-%s-%d", server, n)
			inFlight.Go(func() {
				tr := p.offer(ctx, server, rid)
				if tr.accepted {
					mu.Lock()
					lastOK = tr.sent
					mu.Unlock()
				}
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// probeTerms is an offer of one GPU for a job of d at full use to
// server: a time limit of 5 s, or a multiple of it past 3d, and a
// prepayment of all it can cost (2 for each 5 s).
func probeTerms(client, server string, d time.Duration) contract.Terms {
	fives := max(1, int64((3*d+5*time.Second-1)/(5*time.Second)))
	return contract.Terms{Client: client, Currency: string(market.Currency.Code), GPUs: 1, Server: server,
		TimeLimit: time.Duration(fives) * 5 * time.Second, Prepayment: dectest.D("2").Mul(decimal.NewFromInt(fives)),
		P:   contract.Flat(dectest.D("0.40")),
		Job: &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: d}}}
}

// long makes one offer of a job that runs for d to server, beside the
// probing, and returns its contract's id once the job runs: a job that
// outlasts a moment the test picks.
func (p *probe) long(store exchange.Store, server string, d time.Duration) string {
	p.t.Helper()
	rid := fmt.Sprintf("probe-%s-long-%d", server, time.Now().UnixNano())
	reply, err := p.c.Offer(context.Background(), rid, probeTerms(p.id, server, d))
	p.told.Note(p.id, rid, reply, err)
	require.NoError(p.t, err, "an offer of a %v job to %s", d, server)
	require.NotNil(p.t, reply.Contract, "an offer of a %v job to %s: %+v", d, server, reply)
	id := reply.Contract.ID
	waitFor(p.t, 5*time.Second, id+" running", func() bool {
		k, err := store.Contract(context.Background(), id)
		return err == nil && k.State == contract.StateRunning
	})
	return id
}

// offer makes one offer of a short job to server and keeps what came of it.
func (p *probe) offer(ctx context.Context, server, rid string) try {
	terms := probeTerms(p.id, server, 300*time.Millisecond)
	tr := try{sent: time.Now()}
	reply, err := p.c.Offer(ctx, rid, terms)
	tr.answered = time.Now()
	if ctx.Err() != nil && err != nil {
		// The probe stopped with this offer in flight: not an answer,
		// but the offer may have made a contract, so its request id is
		// kept as one without an answer (the check then finds the
		// contract named), as a client that gave up would count it.
		p.told.Note(p.id, rid, reply, &bourse.Error{Code: bourse.EDeadlineExceeded, Message: "the probe stopped: " + err.Error()})
		return tr
	}
	p.told.Note(p.id, rid, reply, err)
	switch {
	case err != nil:
		tr.code, tr.why = bourse.ErrorCode(err), bourse.ErrorMessage(err)
	case reply.Contract != nil:
		tr.accepted = true
	case len(reply.Counters) > 0:
		tr.code = "countered"
	default:
		tr.code = "rejected"
		for _, r := range reply.Rejections {
			tr.why = r.Reason
		}
	}
	p.mu.Lock()
	p.tries[server] = append(p.tries[server], tr)
	p.mu.Unlock()
	return tr
}

// stop ends the probing and waits for the offers in flight.
func (p *probe) stop() {
	p.cancel()
	p.wg.Wait()
}

// waitAccepted waits until an offer to server sent after from is accepted.
func (p *probe) waitAccepted(server string, from time.Time, within time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		ok := slices.ContainsFunc(p.tries[server], func(tr try) bool { return tr.accepted && !tr.sent.Before(from) })
		p.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Fatalf("no offer to %s accepted within %v of %s; the last answers: %s", server, within,
		from.Format(time.TimeOnly+".000"), p.seen(server, from, from))
}

// seen says what the probe saw of server from a fault's start (began) on:
// for how long offers failed, from began to the first accepted offer sent
// after the failures, and how long after the fault's end (ended) that
// was; the answers it got meanwhile; the slowest answer.
func (p *probe) seen(server string, began, ended time.Time) string {
	p.mu.Lock()
	tries := slices.Clone(p.tries[server])
	p.mu.Unlock()
	slices.SortFunc(tries, func(a, b try) int { return a.sent.Compare(b.sent) })
	codes := map[bourse.Code]int{}
	whys := map[string]bool{}
	var back time.Time
	var slowest time.Duration
	failed := false
	for _, tr := range tries {
		if tr.answered.Before(began) {
			continue
		}
		if !back.IsZero() {
			break
		}
		slowest = max(slowest, tr.answered.Sub(tr.sent))
		if !tr.accepted {
			failed = true
			codes[tr.code]++
			whys[string(tr.code)+": "+tr.why] = true
			continue
		}
		if failed && !tr.sent.Before(ended) {
			back = tr.sent
		}
	}
	var answers []string
	for _, c := range slices.Sorted(maps.Keys(codes)) {
		answers = append(answers, fmt.Sprintf("%s×%d", c, codes[c]))
	}
	switch {
	case !failed:
		return fmt.Sprintf("none failed; the slowest answer took %v", slowest.Round(10*time.Millisecond))
	case back.IsZero():
		return fmt.Sprintf("failing (%s), none accepted since", strings.Join(answers, ", "))
	}
	return fmt.Sprintf("failed for %v from the fault's start, accepted again %v after its end; answers meanwhile %s (%s); the slowest took %v",
		back.Sub(began).Round(10*time.Millisecond), back.Sub(ended).Round(10*time.Millisecond), strings.Join(answers, ", "),
		strings.Join(slices.Sorted(maps.Keys(whys)), "; "), slowest.Round(10*time.Millisecond))
}

// during says what the probe saw of server while a fault lasted, from
// began to ended, where offers may go on being accepted (a partition's
// side that still reaches the server): how many offers sent meanwhile
// were accepted and how many failed, with what, the longest time without
// an accepted offer, and when the first offer sent after ended was.
func (p *probe) during(server string, began, ended time.Time) string {
	p.mu.Lock()
	tries := slices.Clone(p.tries[server])
	p.mu.Unlock()
	slices.SortFunc(tries, func(a, b try) int { return a.sent.Compare(b.sent) })
	accepted, failed := 0, map[string]int{}
	last, longest := began, time.Duration(0)
	var back time.Time
	for _, tr := range tries {
		switch {
		case tr.sent.Before(began):
		case !tr.sent.Before(ended):
			if tr.accepted && back.IsZero() {
				back = tr.sent
			}
		case tr.accepted:
			accepted++
			longest, last = max(longest, tr.sent.Sub(last)), tr.sent
		default:
			failed[string(tr.code)+" ("+tr.why+")"]++
		}
	}
	longest = max(longest, ended.Sub(last))
	var fails []string
	for _, why := range slices.Sorted(maps.Keys(failed)) {
		fails = append(fails, fmt.Sprintf("%d %s", failed[why], why))
	}
	again := "none accepted after"
	if !back.IsZero() {
		again = fmt.Sprintf("accepted again %v after", back.Sub(ended).Round(10*time.Millisecond))
	}
	return fmt.Sprintf("%d accepted, failed %s; the longest without an accepted offer %v; %s its end",
		accepted, cmp.Or(strings.Join(fails, ", "), "none"), longest.Round(10*time.Millisecond), again)
}

// readings keeps the readings the servers sent, as the usage stream got
// them, read by a durable consumer of the test's own beside the
// exchange's: for each contract, the last reading its server made, which
// is what the server says it ran, whatever the exchange counted.
type readings struct {
	t    *testing.T
	cons jetstream.Consumer

	mu     sync.Mutex
	last   map[string]contract.Reading
	server map[string]string // by contract: whose subject its readings came on
	final  int               // final readings seen
}

// recordReadings starts the consumer, on the stream the exchange made.
func recordReadings(t *testing.T, url string, opts ...nats.Option) *readings {
	t.Helper()
	nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := js.Stream(ctx, protocol.UsageStream)
	require.NoError(t, err)
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "fault-test", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	r := &readings{t: t, cons: cons, last: map[string]contract.Reading{}, server: map[string]string{}}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		r.keep(m.Subject(), m.Data())
		_ = m.Ack()
	})
	require.NoError(t, err)
	t.Cleanup(cc.Stop)
	// A final reading may reach the exchange in a question for its
	// receipt rather than through the stream (which lost it, or the
	// exchange refused it there for the server's rate): the server sent
	// it all the same.
	sub, err := nc.Subscribe(protocol.ServerSubject("*", protocol.VerbReceipts), func(m *nats.Msg) { r.keep(m.Subject, m.Data) })
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	require.NoError(t, nc.Flush())
	return r
}

// keep keeps a reading, or each reading of a readings message
// (bourse.v1.server.<server>.readings, or a question for receipts,
// bourse.v1.server.<server>.receipts).
func (r *readings) keep(subject string, data []byte) {
	if strings.HasSuffix(subject, "."+protocol.VerbReadings) || strings.HasSuffix(subject, "."+protocol.VerbReceipts) {
		rs, err := protocol.DecodeReadings(data)
		if err != nil {
			r.t.Errorf("a readings message the test cannot read on %s: %v", subject, err)
			return
		}
		for _, one := range rs.Readings {
			r.keepOne(subject, one.Reading)
		}
		return
	}
	r.keepOne(subject, data)
}

func (r *readings) keepOne(subject string, data []byte) {
	rd, err := protocol.DecodeReading(data)
	if err != nil {
		r.t.Errorf("a reading the test cannot read on %s: %v", subject, err)
		return
	}
	server := strings.Split(subject, ".")[3] // bourse.v1.server.<server>.usage.<contract>, or .readings
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.server[rd.Contract]; ok && s != server {
		r.t.Errorf("contract %s: readings from %s and %s", rd.Contract, s, server)
	}
	r.server[rd.Contract] = server
	if old, ok := r.last[rd.Contract]; ok && old.Seq >= rd.Seq {
		return // a retry, or an older one redelivered
	}
	r.last[rd.Contract] = rd
	if rd.Final {
		r.final++
	}
}

// lastOf is the last reading of contract its server sent, if any.
func (r *readings) lastOf(id string) (contract.Reading, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rd, ok := r.last[id]
	return rd, ok
}

// finals is how many final readings came so far.
func (r *readings) finals() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.final
}

// waitCaughtUp waits until the consumer has had every reading the stream
// holds acknowledged.
func (r *readings) waitCaughtUp(within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	why := ""
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := r.cons.Info(ctx)
		cancel()
		switch {
		case err != nil:
			why = err.Error()
		case info.NumPending > 0 || info.NumAckPending > 0:
			why = fmt.Sprintf("%d readings pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		default:
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("the test's consumer of the usage stream has not caught up within %v: %s", within, why)
}
