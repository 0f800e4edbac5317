package canary_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/canary"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// market is a fake exchange: its servers, and what it answers an offer
// and a take, recorded.
type market struct {
	servers []protocol.Server
	offer   func(t contract.Terms) protocol.OfferReply
	offered []contract.Terms
	taken   []contract.Counter
	ids     []string
}

func (m *market) Servers(context.Context, string) ([]protocol.Server, error) { return m.servers, nil }

func (m *market) Offer(_ context.Context, id string, t contract.Terms) (protocol.OfferReply, error) {
	m.ids = append(m.ids, id)
	m.offered = append(m.offered, t)
	return m.offer(t), nil
}

func (m *market) Take(_ context.Context, id string, k contract.Counter) (protocol.OfferReply, error) {
	m.ids = append(m.ids, id)
	m.taken = append(m.taken, k)
	t := k.Terms
	return protocol.OfferReply{Contract: &protocol.ContractView{ID: "c-taken", Server: k.Server, Terms: t}}, nil
}

// store is a fake store: a contract that settles once read twice.
type store struct {
	c     contract.Contract
	reads int
	kept  []canary.Result
}

func (s *store) Contract(_ context.Context, id string) (contract.Contract, error) {
	s.reads++
	c := s.c
	c.ID = id
	if s.reads < 3 {
		c.State, c.Reason, c.Reading = contract.StateRunning, "", nil
	}
	return c, nil
}

func (s *store) PutCanary(_ context.Context, r canary.Result) error {
	s.kept = append(s.kept, r)
	return nil
}

func runner(m *market, s *store) (*canary.Runner, *time.Time) {
	now := t0
	n := 0
	return &canary.Runner{Market: m, Store: s, Client: "k7", Currency: "CRED", Scale: 2,
		RequestID: func() string { n++; return fmt.Sprintf("cli-%d", n) },
		Now:       func() time.Time { return now },
		Sleep:     func(_ context.Context, d time.Duration) error { now = now.Add(d); return nil },
	}, &now
}

func synthetic(id string, p string) protocol.Server {
	return protocol.Server{ID: id, Currency: "CRED", Runs: &protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic},
		Ask: &protocol.Ask{Classes: []protocol.ClassAsk{{Model: "H100", MemoryMiB: 81920, GPUs: 4, Free: 4, P: contract.Flat(d(p))}}}}
}

var halfAMinute = canary.Truth{Utilization: d("0.5"), Duration: contract.Duration(time.Minute), Tolerance: canary.DefaultTolerance}

// TestTerms: a canary's offer names its server and job, pays the
// server's ask, escrows the most it can cost, and says nothing else.
func TestTerms(t *testing.T) {
	r, _ := runner(&market{servers: []protocol.Server{synthetic("gpu1", "0.002"), synthetic("gpu2", "0.001")}}, &store{})
	ctx := context.Background()
	got, err := r.Terms(ctx, canary.Canary{Server: "gpu1", GPUs: 2, Model: "H100", Truth: halfAMinute})
	require.NoError(t, err)
	want := contract.Terms{Client: "k7", Currency: "CRED", GPUs: 2, Class: contract.Class{Model: "H100"}, TimeLimit: 3 * time.Minute,
		Prepayment: d("0.72"), P: contract.Flat(d("0.002")), Server: "gpu1", Job: halfAMinute.Profile()}
	assert.True(t, want.Equal(got), "%+v", got)

	_, err = r.Terms(ctx, canary.Canary{Server: "gone", Truth: halfAMinute})
	assert.Equal(t, bourse.ENoMatch, bourse.ErrorCode(err), "%v", err)
	_, err = r.Terms(ctx, canary.Canary{Server: "gpu1", Model: "A100", Truth: halfAMinute})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "no ask for A100: %v", err)
	_, err = r.Terms(ctx, canary.Canary{Server: "gpu1", Job: &contract.JobSpec{Command: "/opt/burn"}, Truth: halfAMinute})
	assert.Equal(t, bourse.EJobUnsupported, bourse.ErrorCode(err), "a synthetic server runs no program: %v", err)
	_, err = r.Terms(ctx, canary.Canary{Server: "gpu1", Truth: canary.Truth{Utilization: d("0.5"), Tolerance: d("0.05")}})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "a synthetic job of no duration: %v", err)
	_, err = r.Terms(ctx, canary.Canary{Server: "gpu1", Truth: canary.Truth{Utilization: d("2"), Duration: contract.Duration(time.Minute)}})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err))
	_, err = r.Terms(ctx, canary.Canary{Server: "gpu1", Truth: halfAMinute, TimeLimit: 30 * time.Second})
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "a time limit shorter than the job: %v", err)
	named, err := r.Terms(ctx, canary.Canary{Server: "gpu2", Truth: halfAMinute, P: contract.Flat(d("0.01")), TimeLimit: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, "0.01", named.P[0].Y.String(), "a price named is offered")
	assert.Equal(t, time.Hour, named.TimeLimit)
}

// TestRunTakesCounter: a server that counters the canary's offer is
// taken at its cheapest counter (of that server alone, as any client's
// --take SERVER would); the contract, once the store holds it settled, is
// judged and the result kept.
func TestRunTakesCounter(t *testing.T) {
	m := &market{servers: []protocol.Server{synthetic("gpu1", "0.002")}}
	m.offer = func(tm contract.Terms) protocol.OfferReply {
		dear, cheap, other := tm, tm, tm
		dear.P, cheap.P, other.P = contract.Flat(d("0.004")), contract.Flat(d("0.003")), contract.Flat(d("0.001"))
		return protocol.OfferReply{Counters: []contract.Counter{{ID: "k-dear", Server: "gpu1", Terms: dear}, {ID: "k-cheap", Server: "gpu1", Terms: cheap},
			{ID: "k-other", Server: "gpu9", Terms: other}}}
	}
	s := &store{c: settled(contract.ReasonCompleted, "60", time.Minute)}
	r, now := runner(m, s)
	res, err := r.Run(context.Background(), canary.Canary{Server: "gpu1", GPUs: 2, Truth: halfAMinute})
	require.NoError(t, err)
	require.Len(t, m.taken, 1)
	assert.Equal(t, "k-cheap", m.taken[0].ID)
	assert.Equal(t, []string{"cli-1", "cli-2"}, m.ids, "each request its own id, like any client's")
	assert.Equal(t, "c-taken", res.Contract)
	assert.Equal(t, canary.Passed, res.Verdict, res.Why)
	assert.Equal(t, []canary.Result{res}, s.kept)
	assert.Equal(t, 3, s.reads)
	assert.Equal(t, t0.Add(2*time.Second), *now, "read every second until it ended")
}

// TestRunRefused: an offer no one takes leaves nothing to judge, and no
// result; one that is not settled by its wait is judged inconclusive.
func TestRunRefused(t *testing.T) {
	m := &market{servers: []protocol.Server{synthetic("gpu1", "0.002")}}
	m.offer = func(contract.Terms) protocol.OfferReply {
		return protocol.OfferReply{Rejections: []protocol.Rejection{{Server: "gpu1", Reason: "not enough free GPUs of the class"}}}
	}
	s := &store{}
	r, _ := runner(m, s)
	_, err := r.Run(context.Background(), canary.Canary{Server: "gpu1", Truth: halfAMinute})
	assert.Equal(t, bourse.ERejected, bourse.ErrorCode(err))
	assert.Contains(t, err.Error(), "gpu1: not enough free GPUs")
	assert.Empty(t, s.kept)

	m.offer = func(tm contract.Terms) protocol.OfferReply {
		return protocol.OfferReply{Contract: &protocol.ContractView{ID: "c-slow", Server: "gpu1", Terms: tm}}
	}
	s = &store{c: settled(contract.ReasonCompleted, "60", time.Minute), reads: -100}
	r, now := runner(m, s)
	res, err := r.Run(context.Background(), canary.Canary{Server: "gpu1", Truth: halfAMinute, Wait: 5 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, canary.Inconclusive, res.Verdict)
	assert.Equal(t, t0.Add(5*time.Second), *now)
	assert.Equal(t, []canary.Result{res}, s.kept)
}

// TestRunShortCounter: a counter-offer whose time limit is shorter than
// the job (a fair-use server's) would cut the job short and make an
// honest meter look as if it under-reported: the runner does not take
// it, and there is nothing to judge.
func TestRunShortCounter(t *testing.T) {
	m := &market{servers: []protocol.Server{synthetic("gpu1", "0.002")}}
	m.offer = func(tm contract.Terms) protocol.OfferReply {
		short := tm
		short.TimeLimit = 30 * time.Second
		short.Prepayment = short.CappedPrepayment(2)
		return protocol.OfferReply{Counters: []contract.Counter{{ID: "k-short", Server: "gpu1", Terms: short}}}
	}
	s := &store{}
	r, _ := runner(m, s)
	_, err := r.Run(context.Background(), canary.Canary{Server: "gpu1", Truth: halfAMinute})
	assert.Equal(t, bourse.ERejected, bourse.ErrorCode(err), "%v", err)
	assert.Contains(t, err.Error(), "gpu1: countered with a time limit of 30s, shorter than the job's 1m0s")
	assert.Empty(t, m.taken)
	assert.Empty(t, s.kept)
}
