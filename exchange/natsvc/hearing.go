package natsvc

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/protocol"
)

// The sweep takes a running contract's silence for its server's loss,
// so an instance must know when it cannot hear readings, and tell its
// House (Disconnected): then the House judges no silence until a whole
// ServerLostAfter after it hears again. Besides its own connection to
// NATS (the sweep's driver checks it), four things stop readings, or hold
// them back, while everything else runs:
//
//   - The usage stream's leader dies. Until the other replicas elect
//     another (4 to 9 s measured in TestCluster, after a SIGKILL), the
//     stream takes no reading, so servers cannot publish; nothing comes
//     to any instance, and the servers' heartbeats go on. Every instance
//     asks the stream for its leader every pull heartbeat (watchStream).
//   - The consumer's leader dies. A pull waits at that node, and is lost
//     with it; nothing says so but the missing heartbeats. With nats.go's
//     defaults (a 30 s pull, heartbeats every 15 s) an instance notices
//     after 30 s, while readings wait; so pulls carry a heartbeat that is
//     missed well within ServerLostAfter, and an instance that misses one,
//     or hears that the consumer's leader changed, is deaf until its next
//     pull.
//   - The consumer hands nothing out while its pulls hear their
//     heartbeats: paused (`nats consumer pause`), or at its MaxAckPending
//     (readings taken and never acknowledged); or it is far behind (a
//     server floods its subjects). NATS, the stream and the pulls all
//     look well; only the consumer's position says that readings wait.
//     That is not deafness: the sweep asks the stream, server by server,
//     whether that server's readings wait undelivered or unacknowledged
//     (backlog.Holds), and waits only for those; every pull heartbeat
//     each instance logs whether the consumer lags (behind), for the
//     operator. A flood so delays only the contracts of servers whose
//     readings are queued behind it, by the time the consumer takes to
//     reach them.
//   - An instance is paused (SIGSTOP, a VM pause) with a pull waiting.
//     JetStream goes on handing readings to that pull until it expires,
//     and hands them out again only after AckWait, perhaps to the same
//     pull: a reading can wait the pull's expiry and AckWait before a
//     live instance counts it, while the live instances' sweeps count
//     the silence. So a pull expires after two of its heartbeats (at
//     least a second, JetStream's least): with AckWait half of
//     ServerLostAfter less ReadingEvery, and a heartbeat a fifth of it,
//     a reading reaches a live instance within 0.9 of that, before its
//     contract may be judged lost (TestCluster pauses an instance for 8 s).
//     And a contract whose server's heartbeats (which every instance
//     hears directly) still list it is not judged lost at all
//     (House.Sweep): the timing above is a second line of defence.
//     The first is the stream itself (backlog.Holds): a reading stays in
//     it, past the consumer's acknowledgement floor, until an instance
//     acknowledges it, so while a server's readings are there, taken by
//     a paused instance or not, its silence is not judged. The timing
//     alone did not hold once readings travelled in one message per
//     server per interval (a reading may wait an interval before it
//     leaves its server), nor when the paused instance held the
//     contract's row while storing it.

// pullExpiry is how long each pull of the usage consumer waits.
func pullExpiry(heartbeat time.Duration) time.Duration {
	return max(time.Second, 2*heartbeat)
}

// pullHeartbeat is the heartbeat of the usage consumer's pulls: a fifth of
// the time between a server's last reading and its judgement, between
// 500 ms (the least JetStream takes) and 5 s.
func pullHeartbeat(lostAfter, readingEvery time.Duration) time.Duration {
	return min(max((lostAfter-readingEvery)/5, 500*time.Millisecond), 5*time.Second)
}

// deaf reports whether a consumer error means that readings may be
// waiting which this instance does not get.
func deaf(err error) bool {
	return errors.Is(err, jetstream.ErrNoHeartbeat) || errors.Is(err, jetstream.ErrConsumerLeadershipChanged) ||
		errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrConsumerNotFound)
}

// watchStream asks the usage stream and its consumer every, until ctx
// ends, whether readings reach this instance's House, and tells the House
// it cannot hear them (Disconnected) while the stream has no leader,
// either does not answer within every, or the consumer lags (behind).
func (s *Service) watchStream(ctx context.Context, stream jetstream.Stream, cons jetstream.Consumer, every time.Duration) {
	log := s.cfg.Logger
	t := time.NewTicker(every)
	defer t.Stop()
	leaderless, lagging := false, false
	var stored uint64 // the stream's last sequence at the last tick
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		actx, cancel := context.WithTimeout(ctx, every)
		info, err := stream.Info(actx)
		var ci *jetstream.ConsumerInfo
		if err == nil {
			ci, err = cons.Info(actx)
		}
		cancel()
		if ctx.Err() != nil {
			return
		}
		leader, ok := "", false
		if err == nil {
			leader, ok = streamLeader(info)
		}
		late := ok && behind(ci, stored)
		switch {
		case !ok:
			s.house.Disconnected()
			if !leaderless {
				log.Warn("usage stream has no leader, or it or its consumer does not answer: servers may not publish readings, nor this instance get them; the sweep judges no silence until they do", "err", err)
			}
		case leaderless:
			log.Info("usage stream has a leader again", "leader", cmp.Or(leader, "the only server"))
		}
		if late {
			s.marks.lagged(s.cfg.Now())
		}
		switch {
		case late:
			// Not deaf: the sweep asks the stream, server by server,
			// whether readings wait (backlog.Holds), and waits for those
			// whose do. Judging no one at all while the consumer lagged
			// let one server's flood of readings hold every other
			// party's contracts (the probe of 2026-12-01: a dead
			// server's contract settled 156 s late, a never-started one
			// voided 149 s late).
			if !lagging {
				log.Warn("usage consumer behind: readings stored a heartbeat ago wait undelivered; the sweep waits for each server whose readings wait",
					"pending", ci.NumPending, "delivered", ci.Delivered.Stream, "stored", stored)
			}
		case lagging && ok:
			log.Info("usage consumer caught up", "delivered", ci.Delivered.Stream)
		}
		leaderless = !ok
		if ok {
			lagging, stored = late, info.State.LastSeq
			s.marks.add(s.cfg.Now(), stored)
		}
	}
}

// behind reports whether the usage consumer, by its info, has yet to hand
// out a reading the stream had stored by stored (its last sequence a
// heartbeat ago). Its pulls may hear their heartbeats all the while: a
// paused consumer, or one at its MaxAckPending, hands out nothing and
// says nothing of it. A reading handed out is the taker's to count, or
// comes back after AckWait (see the top of this file).
func behind(ci *jetstream.ConsumerInfo, stored uint64) bool {
	return ci != nil && ci.NumPending > 0 && ci.Delivered.Stream < stored
}

// streamLeader is the node that leads the stream by its info, and whether
// it has one. Cluster is optional in JetStream's answer: a nats-server
// outside a cluster (Debian's 2.9) gives none, and is the stream's only
// node and so its leader (""); a node of a cluster names the leader, or
// none during an election.
func streamLeader(info *jetstream.StreamInfo) (string, bool) {
	switch {
	case info == nil:
		return "", false
	case info.Cluster == nil:
		return "", true
	}
	return info.Cluster.Leader, info.Cluster.Leader != ""
}

// backlog is the Service as the House's Backlog: the usage stream.
type backlog Service

// stuckAfter is how long a reading may wait in the usage stream,
// unacknowledged, and still hold its server's judgement, in multiples of
// ServerLostAfter. A reading taken by an instance that paused comes back
// within AckWait and a pull's expiry of its pause; one that waits much
// longer is stuck, not late: nats-server 2.9, after a restart, hands some
// readings out again and again and never records their acknowledgement
// (TestFaults: 28 such, the consumer's floor still for minutes), and such
// a reading would hold its server's judgement for good.
const stuckAfter = 2

// Holds reports whether the usage stream holds readings from server that
// the exchange's consumer has not handed out yet, or has handed out and
// not seen acknowledged if they were stored within
// stuckAfter·ServerLostAfter: the first message on the server's subjects
// past the consumer's acknowledgement floor, and past the stream's last
// sequence at that time (marks) unless the consumer has yet to hand that
// out. A reading not yet handed out is queued, never stuck, however long
// it waits (a consumer paused, or behind a flood). Whichever instance took
// such a reading (or none yet), it is not counted, and stays until an
// instance acknowledges it (stored) or terminates it (refused). Asking
// by the floor, not by what the stream keeps, matters too: nats-server
// 2.9 keeps acknowledged messages of an interest-retention stream after
// a restart (TestFaults saw 37), and another consumer keeps them until
// it acknowledges them as well. Two requests, and only for servers whose
// contracts' silence the sweep is about to judge.
func (b *backlog) Holds(ctx context.Context, server string) (bool, error) {
	if b.usage == nil || b.usageCons == nil {
		return false, errors.New("natsvc: the usage stream is not open yet")
	}
	ctx, cancel := context.WithTimeout(ctx, max(b.cfg.SweepEvery, time.Second))
	defer cancel()
	ci, err := b.usageCons.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("natsvc: usage consumer info: %w", err)
	}
	now := b.cfg.Now()
	stuck := min(b.marks.at(now.Add(-stuckAfter*b.cfg.ServerLostAfter)), ci.Delivered.Stream)
	if b.marks.laggedSince(now.Add(-b.cfg.ServerLostAfter)) {
		// Readings that waited undelivered while the consumer lagged are
		// old when it hands them out at last: they are late, not stuck,
		// until they are stored (TestUndeliveredReadingsHoldTheSweep
		// settled a contract as lost while its final reading, stored in
		// the stream seconds before, was being counted).
		stuck = 0
	}
	from := max(ci.AckFloor.Stream, stuck) + 1
	_, err = b.usage.GetMsg(ctx, from, jetstream.WithGetMsgSubject(protocol.ServerSubject(server, ">")))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("natsvc: usage stream, next reading of server %s: %w", server, err)
	}
	return true, nil
}

// marks are the usage stream's last sequence number as watchStream saw
// it, by time, for stuckAfter·ServerLostAfter and a little more, and
// when it last saw the consumer lag.
type marks struct {
	mu   sync.Mutex
	keep time.Duration
	all  []mark
	lag  time.Time
}

// lagged records that the consumer lagged at at (behind).
func (m *marks) lagged(at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lag = at
}

// laggedSince says whether the consumer lagged at or after since.
func (m *marks) laggedSince(since time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.lag.IsZero() && !m.lag.Before(since)
}

type mark struct {
	at  time.Time
	seq uint64
}

// add records that the stream's last sequence was seq at at. A sequence
// below the last mark's says the stream was made anew (deleted, or
// restored from a backup): the marks before it number other messages,
// and would pass over the new stream's readings, so they go.
func (m *marks) add(at time.Time, seq uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.all); n > 0 && seq < m.all[n-1].seq {
		m.all = m.all[:0]
	}
	m.all = append(m.all, mark{at, seq})
	// Keep one mark older than keep: at() needs one at or before it.
	n := 0
	for n+1 < len(m.all) && at.Sub(m.all[n+1].at) > m.keep {
		n++
	}
	m.all = m.all[n:]
}

// at is the stream's last sequence at t, as the latest mark at or
// before t says: every message after it was stored after t, or a little
// before. 0 if no mark is that old.
func (m *marks) at(t time.Time) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var seq uint64
	for _, k := range m.all {
		if k.at.After(t) {
			break
		}
		seq = k.seq
	}
	return seq
}
