package natsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Limits for the whole market. Requests reach the instances of the queue
// group at random, so an instance that allows a party 1/n of its limits,
// with n the instances running, bounds the party to its limits across
// the market (each instance's share holds on its own, so their sum does
// too), at no cost per request. Shares round down, but never below one
// request: with more instances than a limit allows requests, the market
// allows one an instance. Each instance says it runs on PeersSubject
// every PeersEvery; one not heard for three times that is gone. While the
// instances' counts differ (one just started, or just stopped), the sum
// of the shares lies between the old limit and the new.

// PeersSubject is where exchange instances say they run.
const PeersSubject = "bourse.v1.exchange.peers"

// peersEvery is how often an instance says it runs.
const peersEvery = time.Second

// peers counts the instances running, this one included.
type peers struct {
	self  string
	since time.Time // when this instance began to listen
	mu    sync.Mutex
	seen  map[string]time.Time
}

func newPeers(self string, now time.Time) *peers {
	return &peers{self: self, since: now, seen: map[string]time.Time{}}
}

// newInstanceID names an instance: among its peers, and in the store's
// record of what it hears (exchange.Config.Instance).
func newInstanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// leads says whether this instance is the one of those running that does
// what one instance must do for all (publish market data): the one with
// the least id. An instance listens two of the peers' periods before it
// may lead, so that it has heard the others; while the instances' views
// differ (one just stopped) two may lead for a moment.
func (p *peers) leads(now time.Time) bool {
	if now.Sub(p.since) < 2*peersEvery {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, at := range p.seen {
		if now.Sub(at) <= 3*peersEvery && id < p.self {
			return false
		}
	}
	return true
}

// heard notes an instance's word at now.
func (p *peers) heard(id string, now time.Time) {
	if id == p.self || id == "" {
		return
	}
	p.mu.Lock()
	p.seen[id] = now
	p.mu.Unlock()
}

// count is the instances running at now: this one, and those heard
// within three of their periods.
func (p *peers) count(now time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 1
	for id, at := range p.seen {
		if now.Sub(at) > 3*peersEvery {
			delete(p.seen, id)
			continue
		}
		n++
	}
	return n
}

// startPeers subscribes to the other instances' word and, until ctx
// ends, says this one's every peersEvery and keeps the per-party limits
// at this instance's share of the instances it knows.
func (s *Service) startPeers(ctx context.Context) error {
	sub, err := s.nc.Subscribe(PeersSubject, func(m *nats.Msg) { s.peers.heard(string(m.Data), s.cfg.Now()) })
	if err != nil {
		return err
	}
	s.subs = append(s.subs, sub)
	s.wg.Go(func() {
		t := time.NewTicker(peersEvery)
		defer t.Stop()
		for {
			if s.served() { // one out of the queue group leads nothing, nor takes a share
				_ = s.nc.Publish(PeersSubject, []byte(s.peers.self))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				now := s.cfg.Now()
				s.share(s.peers.count(now), now)
			}
		}
	})
	return nil
}

// share sets the per-party limits to a 1/n share of Limits.
func (s *Service) share(n int, now time.Time) {
	l := s.serve.Limits
	s.perParty.setMax(max(1, l.InFlight/n))
	s.limiter.setShare(l.Requests, l.Burst, n, now)
	s.readings.setShare(l.Readings, l.ReadingBurst, n, now)
	s.confirms.setShare(l.Readings, l.ReadingBurst, n, now)
}
