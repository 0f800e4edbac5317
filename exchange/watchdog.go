package exchange

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// Contracts that fail to settle wait between attempts (Stuck.Retry),
// from minBackoff (or WatchdogEvery, if longer), doubling, up to
// maxBackoff; the store lists them after all others meanwhile, so that a
// sweep always makes progress.
const (
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// stuckCountEvery is how often the watchdog refreshes the stuck gauge.
const stuckCountEvery = 10 * time.Second

// watchdog settles running contracts whose server went silent, on their
// last reading (exposure is bounded by the reading interval), voids
// accepted contracts that never started, and ends contracts whose escrow
// is due or that stayed stuck too long. Every instance runs one; the
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
	// While this instance cannot reach NATS, or has not been running
	// (just started, or stopped by SIGSTOP, a VM pause or starvation: its
	// ticks come late), silence proves nothing: readings wait in
	// JetStream, and those handed to an instance that died come back
	// after AckWait. Judge silence only once a whole ServerLostAfter has
	// passed since.
	if s.nc.Status() != nats.CONNECTED || now.Sub(s.lastSweep) > 2*s.cfg.WatchdogEvery+time.Second {
		s.outage = now
	}
	// From the sweep's end: a sweep that takes long is no pause.
	defer func() { s.lastSweep = s.cfg.Now().UTC() }()
	silentSince := now.Add(-s.cfg.ServerLostAfter)
	if s.outage.After(silentSince) {
		return
	}
	stale, err := s.store.Stale(ctx, now, silentSince, s.cfg.SweepBatch)
	if err != nil {
		s.log.Warn("watchdog: list stale contracts", "err", err)
		return
	}
	for _, c := range stale {
		s.judge(ctx, c, now, silentSince)
	}
	s.expireDue(ctx, now)
	if now.Sub(s.lastStuckCount) >= stuckCountEvery {
		s.lastStuckCount = now
		if cs, err := s.store.Stuck(ctx, 0); err == nil {
			s.metrics.stuckNow.Set(float64(len(cs)))
		}
	}
}

// judge settles a silent running contract on its last reading and voids
// an accepted one past its start deadline. A failure marks the contract
// stuck, to be tried again later.
func (s *Service) judge(ctx context.Context, c trade.Contract, now, silentSince time.Time) {
	var typ protocol.EventType
	got, err := s.updatePriced(ctx, c.ID, func(c *trade.Contract, scale int32) ([]currency.Op, error) {
		switch {
		case c.State == trade.StateRunning && c.LastSeen.Before(silentSince):
			typ = protocol.EventSettled
			return s.settle(c, silentReason(c), scale)
		case c.State == trade.StateAccepted && c.StartDeadline.Before(now):
			typ = protocol.EventVoided
			return s.void(c, trade.ReasonNotStarted), nil
		}
		return nil, ErrNoChange
	})
	switch {
	case errors.Is(err, ErrNoChange):
		return
	case err != nil:
		s.stuck(ctx, c.ID, now, err)
		return
	}
	s.ended(ctx, typ, got)
}

// silentReason is why a silent running contract settles: the reason of
// its final reading if one was stored (its settlement failed when it
// came), else server_lost.
func silentReason(c *trade.Contract) trade.Reason {
	if r := c.Reading; r != nil && r.Final {
		return finalReason(*r)
	}
	return trade.ReasonServerLost
}

// ended reports a contract the watchdog settled or voided.
func (s *Service) ended(ctx context.Context, typ protocol.EventType, c trade.Contract) {
	if typ == protocol.EventVoided {
		s.metrics.voided.Inc()
	} else {
		s.metrics.settled.WithLabelValues(string(c.Reason)).Inc()
	}
	// Tell the server too: if it is alive but unheard (or started the job
	// after all), the job must stop, since nobody pays for it now.
	go func() { _ = s.stopJob(ctx, c, trade.ReasonKilled) }()
	s.log.Warn("watchdog", "contract", c.ID, "server", c.Server, "state", c.State, "reason", c.Reason, "charge", c.Charge)
	s.event(typ, c)
}

// stuck records that contract id failed to settle or void with cause, and
// when to try it again: the wait doubles from minBackoff (or
// WatchdogEvery) up to maxBackoff. The first failure is logged as an error and counted; the
// later ones only at debug level. A contract stuck for StuckLimit is
// ended by the fixed rule (expire).
func (s *Service) stuck(ctx context.Context, id string, now time.Time, cause error) {
	got, err := s.store.Update(ctx, id, func(c *trade.Contract) ([]currency.Op, error) {
		if !c.HoldsEscrow() {
			return nil, ErrNoChange
		}
		st := trade.Stuck{Since: now}
		if c.Stuck != nil {
			st = *c.Stuck
		}
		st.Attempts++
		st.Retry = now.Add(backoff(max(minBackoff, s.cfg.WatchdogEvery), st.Attempts))
		st.Error = bourse.ErrorMessage(cause)
		c.Stuck = &st
		return nil, nil
	})
	if err != nil {
		if !errors.Is(err, ErrNoChange) {
			s.log.Warn("watchdog: cannot record a stuck contract", "contract", id, "cause", cause, "err", err)
		}
		return
	}
	st := got.Stuck
	if st.Attempts == 1 {
		s.metrics.stuck.Inc()
		s.log.Error("watchdog: contract stuck: it holds its escrow and does not settle; retrying with backoff",
			"contract", id, "server", got.Server, "state", got.State, "err", cause, "ends_by_rule_at", st.Since.Add(s.cfg.StuckLimit))
	} else {
		s.log.Debug("watchdog: contract still stuck", "contract", id, "attempts", st.Attempts, "retry", st.Retry, "err", cause)
	}
	if now.Sub(st.Since) >= s.cfg.StuckLimit {
		if err := s.expire(ctx, id); err != nil {
			s.log.Warn("watchdog: cannot end a stuck contract by the rule either; trying again later", "contract", id, "err", err)
		}
	}
}

func backoff(first time.Duration, attempts int) time.Duration {
	d := first
	for i := 1; i < attempts && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

// expireDue ends the contracts whose escrow's deadline has passed by the
// ledger's clock: no legitimate contract lives that long (the deadline is
// its start deadline plus its time limit, ServerLostAfter and StuckLimit),
// so one that does, whatever the cause (a server that keeps reading but
// never ends it, a settlement that keeps failing), ends by the fixed rule.
// A hold without a contract, which no exchange opens, is expired in the
// ledger alone.
func (s *Service) expireDue(ctx context.Context, now time.Time) {
	due, err := s.store.Ledger().DueHolds(ctx, s.cfg.SweepBatch)
	if err != nil {
		s.log.Warn("watchdog: list due holds", "err", err)
		return
	}
	for _, h := range due {
		if s.retryHold[h.ID].After(now) {
			continue
		}
		id := string(h.ID)
		c, err := s.store.Contract(ctx, id)
		switch {
		case bourse.ErrorCode(err) == bourse.ENotFound:
			_, err = currency.Do(ctx, s.store.Ledger(), currency.Expire{Key: "expire/" + id, Hold: h.ID})
			s.log.Warn("watchdog: expired a hold that no contract owns", "hold", id, "amount", h.Amount, "err", err)
		case err != nil:
		case c.Stuck != nil && c.Stuck.Retry.After(now):
			continue
		default:
			if err = s.expire(ctx, id); err != nil {
				s.stuck(ctx, id, now, err)
			}
		}
		if err != nil {
			s.retryHold[h.ID] = now.Add(maxBackoff)
		} else {
			delete(s.retryHold, h.ID)
		}
	}
}

// expire ends contract id by the fixed rule: settled on its last valid
// reading with reason expired, or, when it has none or that settlement
// fails, voided with a full refund. Stored readings passed every check on
// the way in, so only a ledger that refuses the capture (or a bug) gets
// to the void.
func (s *Service) expire(ctx context.Context, id string) error {
	var typ protocol.EventType
	got, err := s.updatePriced(ctx, id, func(c *trade.Contract, scale int32) ([]currency.Op, error) {
		if !c.HoldsEscrow() {
			return nil, ErrNoChange
		}
		if c.Reading == nil {
			typ = protocol.EventVoided
			return s.void(c, trade.ReasonExpired), nil
		}
		typ = protocol.EventSettled
		return s.settle(c, trade.ReasonExpired, scale)
	})
	if err != nil && !errors.Is(err, ErrNoChange) && typ == protocol.EventSettled {
		s.log.Warn("watchdog: the last reading does not settle; voiding", "contract", id, "err", err)
		got, err = s.store.Update(ctx, id, func(c *trade.Contract) ([]currency.Op, error) {
			if !c.HoldsEscrow() {
				return nil, ErrNoChange
			}
			typ = protocol.EventVoided
			return s.void(c, trade.ReasonExpired), nil
		})
	}
	switch {
	case errors.Is(err, ErrNoChange):
		return nil
	case err != nil:
		return err
	}
	s.ended(ctx, typ, got)
	return nil
}
