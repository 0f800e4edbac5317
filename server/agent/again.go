package agent

import (
	"sync"
	"time"

	"github.com/bourse/bourse/contract"
)

// againWithin is how long before its connection to NATS dropped a final
// reading JetStream acknowledged is sent again once the connection is
// back. Debian's nats-server 2.9 acknowledges readings that reach it while
// it shuts down, and drops some of them from the usage stream (its
// retention is by interest, and 2.9 stops the stream's consumers before
// it stops taking messages): a final reading lost so would leave its
// contract to be settled as server_lost on an earlier reading. Such a
// reading was acknowledged a few hundred milliseconds at most before the
// server closed the agent's connection; ten seconds is ample, and costs a
// few copies that the stream's de-duplication, or the exchange, drops.
const againWithin = 10 * time.Second

// finalsAgain keeps the final readings JetStream acknowledged within
// againWithin, and, after a reconnect, those of them to send again.
type finalsAgain struct {
	mu      sync.Mutex
	acked   []ackedFinal // oldest first
	dropped time.Time    // when the connection last dropped
	due     []contract.Reading
}

type ackedFinal struct {
	rd contract.Reading
	at time.Time
}

// sent records a final reading JetStream acknowledged at at, and forgets
// those acknowledged more than againWithin before it.
func (f *finalsAgain) sent(rd contract.Reading, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := 0
	for i < len(f.acked) && f.acked[i].at.Before(at.Add(-againWithin)) {
		i++
	}
	f.acked = append(f.acked[i:], ackedFinal{rd, at})
}

// lost records that the connection dropped at at.
func (f *finalsAgain) lost(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = at
}

// back makes the final readings acknowledged within againWithin before
// the connection last dropped due to be sent again.
func (f *finalsAgain) back() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.acked {
		if a.at.Before(f.dropped.Add(-againWithin)) || a.at.After(f.dropped) {
			continue
		}
		if !containsReading(f.due, a.rd) {
			f.due = append(f.due, a.rd)
		}
	}
}

// next is the next final reading due to be sent again, if any.
func (f *finalsAgain) next() (contract.Reading, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.due) == 0 {
		return contract.Reading{}, false
	}
	return f.due[0], true
}

// done records that rd, which next gave, was sent again.
func (f *finalsAgain) done(rd contract.Reading) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.due) > 0 && f.due[0].Contract == rd.Contract && f.due[0].Seq == rd.Seq {
		f.due = f.due[1:]
	}
}

func containsReading(rds []contract.Reading, rd contract.Reading) bool {
	for _, r := range rds {
		if r.Contract == rd.Contract && r.Seq == rd.Seq {
			return true
		}
	}
	return false
}
