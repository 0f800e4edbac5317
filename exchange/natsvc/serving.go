package natsvc

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Serving: an instance that cannot reach its database, or the usage
// stream's leader (its NATS node cut off from the stream's quorum), leaves
// the queue group: it answers no request until it can again, and the
// instances that can answer them. An instance that stayed would sell GPUs
// whose readings it cannot hear (its server's final readings waiting in
// the server's outbox while the other side's sweep settles the contract
// lost), and would answer every other request "unavailable" after its
// retries, where another instance answers at once (issue 45 item 2). It
// keeps hearing heartbeats, and judges no silence while deaf (the sweep's
// Disconnected), and it rejoins once its checks pass again. Where every
// instance is deaf no request has a responder: clients are told no
// exchange is listening, and retry.

// checksToChange is how many checks in a row must agree before the
// instance leaves the queue group or rejoins it: a single slow answer is
// not an outage, nor one good answer a recovery.
const checksToChange = 2

// serving is whether an instance serves requests now, and why not.
type serving struct {
	mu     sync.Mutex
	down   error     // why it does not serve; nil while it does
	since  time.Time // when it left
	failed int       // checks failed in a row
	passed int       // checks passed in a row since it left
}

// Serving says whether the instance serves requests now: nil, or why it
// left the queue group (its /readyz says so).
func (s *Service) Serving() error {
	s.serving.mu.Lock()
	defer s.serving.mu.Unlock()
	if s.serving.down != nil {
		return fmt.Errorf("left the queue group %s ago: %w", time.Since(s.serving.since).Round(time.Second), s.serving.down)
	}
	return nil
}

// Ready says whether the instance can take requests: NATS is up and it
// serves (Serving).
func (s *Service) Ready(context.Context) error {
	if st := s.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("NATS is %s", st)
	}
	return s.Serving()
}

// watchServing checks every CheckEvery that the instance can serve, and
// leaves or rejoins the queue group as the checks say.
func (s *Service) watchServing(ctx context.Context) {
	every(ctx, s.serve.CheckEvery, func() {
		if s.nc.Status() != nats.CONNECTED {
			return // it hears no request either way; the sweep knows (Isolated)
		}
		// A check may take two periods: an answer slow under load is
		// not a cut, and the checks do not overlap (every).
		cctx, cancel := context.WithTimeout(ctx, 2*s.serve.CheckEvery)
		err := s.canServe(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		s.checked(err)
	})
}

// canServe checks what every sale needs: the database answers a read,
// and the usage stream has a leader this instance reaches.
func (s *Service) canServe(ctx context.Context) error {
	if _, err := s.cfg.Store.Ledger().Currencies(ctx); err != nil {
		return fmt.Errorf("the database does not answer: %w", err)
	}
	if s.usage == nil {
		return nil
	}
	info, err := s.usage.Info(ctx)
	if err != nil {
		return fmt.Errorf("the usage stream does not answer: %w", err)
	}
	if _, ok := streamLeader(info); !ok {
		return errors.New("the usage stream has no leader")
	}
	return nil
}

// checked takes a check's result: after checksToChange failures in a row
// the instance leaves the queue group; after as many passes it rejoins.
func (s *Service) checked(err error) {
	log := s.cfg.Logger
	s.serving.mu.Lock()
	defer s.serving.mu.Unlock()
	if err != nil {
		s.serving.passed = 0
		if s.serving.failed++; s.serving.failed < checksToChange || s.serving.down != nil {
			if s.serving.down != nil {
				s.serving.down = err // the latest reason
			}
			return
		}
		s.serving.down, s.serving.since = err, s.cfg.Now()
		s.house.Disconnected()
		s.leave()
		log.Warn("this instance left the exchange's queue group: it answers no request until it can reach the database and the usage stream again", "err", err)
		return
	}
	s.serving.failed = 0
	if s.serving.down == nil {
		return
	}
	if s.serving.passed++; s.serving.passed < checksToChange {
		return
	}
	if err := s.startEndpoints(); errors.Is(err, errStopped) {
		return
	} else if err != nil {
		log.Error("this instance cannot rejoin the exchange's queue group", "err", err)
		return
	}
	log.Info("this instance rejoined the exchange's queue group", "was_out", time.Since(s.serving.since).Round(time.Second))
	s.serving.down, s.serving.passed = nil, 0
}

// leave stops the micro service: its endpoints leave the queue group
// (the requests in flight are answered by their handlers), and the
// instance stops announcing itself to its peers, so that another leads
// the book's matching and the limits are shared among those that serve.
func (s *Service) leave() {
	s.svcMu.Lock()
	defer s.svcMu.Unlock()
	if s.svc != nil {
		_ = s.svc.Stop()
		s.svc = nil
	}
}

// served says whether the instance serves now: matching the book and
// announcing itself to its peers wait while it does not.
func (s *Service) served() bool {
	s.serving.mu.Lock()
	defer s.serving.mu.Unlock()
	return s.serving.down == nil
}

// Requests counts the requests this instance's endpoints took since it
// last joined the queue group (micro's stats): which instance answers.
func (s *Service) Requests() int {
	s.svcMu.Lock()
	defer s.svcMu.Unlock()
	if s.svc == nil {
		return 0
	}
	n := 0
	for _, e := range s.svc.Stats().Endpoints {
		n += e.NumRequests
	}
	return n
}
