package exchange

import (
	"context"
	"errors"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
)

// Contracts that fail to settle wait between attempts (Stuck.Retry),
// from minBackoff (or SweepEvery, if longer), doubling, up to
// maxBackoff; the store lists them after all others meanwhile, so that a
// sweep always makes progress.
const (
	minBackoff = time.Second
	maxBackoff = 5 * time.Minute
)

// stuckCountEvery is how often the sweep refreshes the stuck gauge.
const stuckCountEvery = 10 * time.Second

// Sweep settles running contracts whose server went silent, or whose
// client's stop is due, on their last reading (exposure is bounded by the
// reading interval, and by the stop grace), voids accepted
// contracts that never started, and ends contracts whose escrow is due or
// that stayed stuck too long. Its driver calls it every SweepEvery; every
// instance of the exchange sweeps, and the store's Update makes their
// actions exclusive and the ledger keys make them idempotent.
func (h *House) Sweep(ctx context.Context) {
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	now := h.cfg.Now().UTC()
	defer func() { h.pauses.end(now, h.cfg.Now().UTC(), h.cfg.SweepEvery) }()
	silentSince := now.Add(-h.cfg.ServerLostAfter)
	// What this instance hears, for the others' sweeps: before the pause
	// check, for an instance deaf to readings may still hear servers.
	h.tellHeard(ctx, now)
	h.records(ctx, now)
	// A wait's end needs no server's word: it is judged after a pause too.
	h.expireBook(ctx, now)
	if !h.pauses.begin(now, h.cfg.SweepEvery, silentSince) {
		return
	}
	stale, err := h.store.Stale(ctx, now, silentSince, h.cfg.SweepBatch)
	if err != nil {
		h.log.Warn("sweep: list stale contracts", "err", err)
		return
	}
	// A heartbeat is word that a contract runs for longer than a reading
	// where heartbeats come less often than Heartbeat (pace.go).
	heardSince := now.Add(-h.servers.heardWithin())
	waiting, elsewhere := h.backlog(ctx), h.heardElsewhere(ctx, heardSince)
	for _, c := range stale {
		if c.State == contract.StateRunning && !c.StopDue(now) {
			if why := h.late(c, heardSince, waiting, elsewhere); why != "" {
				// Its readings are late, not lost: the usage stream may hold
				// them for another instance (one paused, its pull not yet
				// expired) while the server's heartbeats, which every
				// instance hears, say it runs the job. A server that
				// heartbeats but never reads is ended at its escrow's
				// deadline (expireDue) on its last reading, as one that
				// reads but never ends is. Once its client's stop is due
				// its server's word counts no more (stopDue). Or its
				// server's readings are still on their way: see backlog.
				h.metrics.readingsLate.WithLabelValues(why).Inc()
				continue
			}
		}
		h.judge(ctx, c, now, silentSince)
	}
	h.expireDue(ctx, now)
	if now.Sub(h.stuckCounted) >= stuckCountEvery {
		h.stuckCounted = now
		if cs, err := h.store.Stuck(ctx, 0); err == nil {
			h.metrics.stuckNow.Set(float64(len(cs)))
		}
	}
}

// late says why running contract c's silence is not judged now, "" if
// it is: its server's heartbeat, heard since heardSince, lists it as
// running ("heartbeat") or as holding its final reading ("settling"),
// its server's readings wait in the Backlog ("waiting"), or another
// instance heard its server list it since ("elsewhere": this one is cut
// off from the server, hearing.go).
func (h *House) late(c contract.Contract, heardSince time.Time, waiting func(string) bool, elsewhere func(server, id string) bool) string {
	if why := h.servers.lists(c.Server, c.ID, heardSince); why != "" {
		return why
	}
	if waiting(c.Server) {
		return "waiting"
	}
	if elsewhere(c.Server, c.ID) {
		return "elsewhere"
	}
	return ""
}

// Backlog is where readings wait between their server and the store: the
// usage stream, for the NATS driver.
type Backlog interface {
	// Holds reports whether readings that server sent wait there, not
	// yet counted or refused.
	Holds(ctx context.Context, server string) (bool, error)
}

// backlog asks Config.Backlog, once per server in a sweep, whether that
// server's readings wait to be counted. A contract whose silence is
// judged may have its last readings there: handed to an instance that
// stopped (SIGSTOP, a VM paused) in the middle of storing them, holding
// the contract's row, they come back only when that instance's pull and
// AckWait expire, or it wakes and gives the row up. Judged meanwhile,
// the contract would settle as lost on an older reading, and the reading
// the server's stream acknowledged would come after the settlement and
// count for nothing (TestCluster saw it: charged 0 for a job its server
// read at 0.21). A Backlog that does not answer holds the judgement too,
// of every server for the rest of the sweep, which asks it no more:
// silence that cannot be told from waiting is not a lost server.
func (h *House) backlog(ctx context.Context) func(server string) bool {
	if h.cfg.Backlog == nil {
		return func(string) bool { return false }
	}
	seen := map[string]bool{}
	failed := false
	return func(server string) bool {
		if failed {
			return true // the backlog did not answer this sweep: ask no more
		}
		held, ok := seen[server]
		if !ok {
			var err error
			held, err = h.cfg.Backlog.Holds(ctx, server)
			if err != nil {
				h.log.Warn("sweep: cannot tell whether a server's readings wait in the usage stream; no silence is judged in this sweep", "server", server, "err", err)
				held, failed = true, true
			}
			seen[server] = held
		}
		return held
	}
}

// Disconnected tells the House that its driver cannot hear the servers'
// readings now (NATS is down, or the usage stream or its consumer has no
// leader): the sweep judges no silence until a whole ServerLostAfter after
// the last call.
func (h *House) Disconnected() {
	h.sweepMu.Lock()
	defer h.sweepMu.Unlock()
	h.pauses.cutOff(h.cfg.Now().UTC())
}

// Isolated tells the House that its driver hears no server at all now
// (its connection to NATS is down): as Disconnected, and a server it knew
// is not forgotten for its silence meanwhile (registry.isolated). A
// server lost during the outage is offered work until ServerLostAfter
// after it, and does not answer.
func (h *House) Isolated() {
	h.Disconnected()
	h.servers.isolated(h.cfg.Now().UTC())
}

// judge settles a running contract on its last reading once its
// client's stop is due (the stop grace has passed: for the stop's
// reason, however its server heartbeats and reads) or its server is
// silent, and voids an accepted one past its start deadline. A failure
// marks the contract stuck, to be tried again later.
func (h *House) judge(ctx context.Context, c contract.Contract, now, silentSince time.Time) {
	var typ protocol.EventType
	var overdue bool
	got, err := h.updatePriced(ctx, c.ID, func(c *contract.Contract, scale int32) ([]currency.Op, error) {
		overdue = false // the change may run more than once: its last run counts
		if !c.Stale(now, silentSince) {
			return nil, ErrNoChange
		}
		switch {
		case c.StopDue(now):
			typ, overdue = protocol.EventSettled, true
			reason := c.Stop.Reason
			if r := c.Reading; r != nil && r.Final {
				reason = finalReason(*r) // its settlement failed when it came
			}
			return h.settle(c, reason, scale)
		case c.State == contract.StateRunning: // silent
			typ = protocol.EventSettled
			return h.settle(c, silentReason(c), scale)
		default: // accepted, past its start deadline
			typ = protocol.EventVoided
			return h.void(c, contract.ReasonNotStarted), nil
		}
	})
	switch {
	case errors.Is(err, ErrNoChange):
		return
	case err != nil:
		h.stuck(ctx, c.ID, now, err)
		return
	}
	if overdue {
		h.metrics.stopsOverdue.Inc()
	}
	h.ended(ctx, typ, got)
}

// silentReason is why a silent running contract settles: the reason of
// its final reading if one was stored (its settlement failed when it
// came), else server_lost.
func silentReason(c *contract.Contract) contract.Reason {
	if r := c.Reading; r != nil && r.Final {
		return finalReason(*r)
	}
	return contract.ReasonServerLost
}

// ended reports a contract the sweep settled or voided.
func (h *House) ended(ctx context.Context, typ protocol.EventType, c contract.Contract) {
	if typ == protocol.EventVoided {
		h.metrics.voided.Inc()
	} else {
		h.metrics.settled.WithLabelValues(string(c.Reason)).Inc()
	}
	// Tell the server too: if it is alive but unheard (or started the job
	// after all), the job must stop, since nobody pays for it now.
	h.router.Control(ctx, c, contract.ReasonKilled, nil)
	h.log.Warn("sweep ended a contract", "contract", c.ID, "server", c.Server, "state", c.State, "reason", c.Reason, "charge", c.Charge)
	h.event(typ, c)
}

// stuck records that contract id failed to settle or void with cause
// (markStuck). The first failure is logged as an error and counted; the
// later ones only at debug level. A contract stuck for StuckLimit is ended
// by the fixed rule (expire).
func (h *House) stuck(ctx context.Context, id string, now time.Time, cause error) {
	got, err := h.store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
		if !c.HoldsEscrow() {
			return nil, ErrNoChange
		}
		h.markStuck(c, now, cause)
		return nil, nil
	})
	if err != nil {
		if !errors.Is(err, ErrNoChange) {
			h.log.Warn("sweep: cannot record a stuck contract", "contract", id, "cause", cause, "err", err)
		}
		return
	}
	st := got.Stuck
	if st.Attempts == 1 {
		h.metrics.stuck.Inc()
		h.log.Error("sweep: contract stuck: it holds its escrow and does not settle; retrying with backoff",
			"contract", id, "server", got.Server, "state", got.State, "err", cause, "ends_by_rule_at", st.Since.Add(h.cfg.StuckLimit))
	} else {
		h.log.Debug("sweep: contract still stuck", "contract", id, "attempts", st.Attempts, "retry", st.Retry, "err", cause)
	}
	if now.Sub(st.Since) >= h.cfg.StuckLimit {
		if err := h.expire(ctx, id); err != nil {
			h.log.Warn("sweep: cannot end a stuck contract by the rule either; trying again later", "contract", id, "err", err)
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
func (h *House) expireDue(ctx context.Context, now time.Time) {
	due, err := h.store.Ledger().DueHolds(ctx, h.cfg.SweepBatch)
	if err != nil {
		h.log.Warn("sweep: list due holds", "err", err)
		return
	}
	for _, hold := range due {
		if h.retryHold[hold.ID].After(now) {
			continue
		}
		id := string(hold.ID)
		c, err := h.store.Contract(ctx, id)
		switch {
		case bourse.ErrorCode(err) == bourse.ENotFound:
			_, err = currency.Do(ctx, h.store.Ledger(), currency.Expire{Key: "expire/" + id, Hold: hold.ID})
			h.log.Warn("sweep: expired a hold that no contract owns", "hold", id, "amount", hold.Amount, "err", err)
		case err != nil:
		case c.Stuck != nil && c.Stuck.Retry.After(now):
			continue
		default:
			if err = h.expire(ctx, id); err != nil {
				h.stuck(ctx, id, now, err)
			}
		}
		if err != nil {
			h.retryHold[hold.ID] = now.Add(maxBackoff)
		} else {
			delete(h.retryHold, hold.ID)
		}
	}
}

// expire ends contract id by the fixed rule: settled on its last valid
// reading with reason expired, or, when it has none or that settlement
// fails, voided with a full refund. Stored readings passed every check on
// the way in, so only a ledger that refuses the capture (or a bug) gets
// to the void.
func (h *House) expire(ctx context.Context, id string) error {
	var typ protocol.EventType
	got, err := h.updatePriced(ctx, id, func(c *contract.Contract, scale int32) ([]currency.Op, error) {
		if !c.HoldsEscrow() {
			return nil, ErrNoChange
		}
		if c.Reading == nil {
			typ = protocol.EventVoided
			return h.void(c, contract.ReasonExpired), nil
		}
		typ = protocol.EventSettled
		return h.settle(c, contract.ReasonExpired, scale)
	})
	if err != nil && !errors.Is(err, ErrNoChange) && typ == protocol.EventSettled {
		h.log.Warn("sweep: the last reading does not settle; voiding", "contract", id, "err", err)
		got, err = h.store.Update(ctx, id, func(c *contract.Contract) ([]currency.Op, error) {
			if !c.HoldsEscrow() {
				return nil, ErrNoChange
			}
			typ = protocol.EventVoided
			return h.void(c, contract.ReasonExpired), nil
		})
	}
	switch {
	case errors.Is(err, ErrNoChange):
		return nil
	case err != nil:
		return err
	}
	h.ended(ctx, typ, got)
	return nil
}
