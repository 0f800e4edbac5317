package exchange

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// watchdog settles running contracts whose server went silent, on their
// last reading (exposure is bounded by the reading interval), and voids
// accepted contracts that never started. Every instance runs one; the
// store's Update makes their actions exclusive and the ledger keys make
// them idempotent.
func (s *Service) watchdog(ctx context.Context) {
	t := time.NewTicker(s.cfg.WatchdogEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep(ctx)
		}
	}
}

func (s *Service) sweep(ctx context.Context) {
	now := s.cfg.Now().UTC()
	// While this instance cannot reach NATS, silence proves nothing: the
	// readings wait in JetStream. Judge silence only once a whole
	// ServerLostAfter has passed since the outage.
	silentSince := now.Add(-s.cfg.ServerLostAfter)
	if s.nc.Status() != nats.CONNECTED {
		s.outage = now
	}
	if s.outage.After(silentSince) {
		return
	}
	stale, err := s.store.Stale(ctx, now, silentSince, 500)
	if err != nil {
		s.log.Warn("watchdog: list stale contracts", "err", err)
		return
	}
	for _, c := range stale {
		var typ protocol.EventType
		got, err := s.updatePriced(ctx, c.ID, func(c *protocol.Contract, scale int32) ([]currency.Op, error) {
			switch {
			case c.State == protocol.StateRunning && c.LastSeen.Before(silentSince):
				typ = protocol.EventSettled
				return s.settle(c, protocol.ReasonServerLost, scale)
			case c.State == protocol.StateAccepted && c.StartDeadline.Before(now):
				typ = protocol.EventVoided
				return s.void(c, protocol.ReasonNotStarted), nil
			}
			return nil, ErrNoChange
		})
		if errors.Is(err, ErrNoChange) {
			continue
		}
		if err != nil {
			s.log.Error("watchdog: settle", "contract", c.ID, "err", err)
			continue
		}
		if typ == protocol.EventVoided {
			s.metrics.voided.Inc()
		} else {
			s.metrics.settled.WithLabelValues(string(got.Reason)).Inc()
		}
		// Tell the server too: if it is alive but unheard (or started the job
		// after all), the job must stop, since nobody pays for it now.
		go func() { _ = s.stopJob(ctx, got, protocol.ReasonKilled) }()
		s.log.Warn("watchdog", "contract", got.ID, "server", got.Server, "state", got.State, "reason", got.Reason)
		s.event(typ, got)
	}
}
