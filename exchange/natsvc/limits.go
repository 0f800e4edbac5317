package natsvc

import (
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/bourse/bourse"
)

// Limits bound what one party can take of the market, so that a client
// flooding it, or a server sending readings without end, slows only
// itself. A refused request gets rate_limited with the time after which it
// may succeed; nothing of it was done. With n instances in the queue
// group each allows a party 1/n of these (peers.go), so that they hold
// for the whole market.
type Limits struct {
	// Requests is how many requests a second one client or server may make
	// on average, Burst how many at once after a quiet spell: 100 and 200
	// by default. A negative Requests is no limit.
	Requests float64
	Burst    int
	// InFlight is how many offers, suspends and kills of one client are
	// handled at once, 64 by default: a fair share of MaxInFlight, so that
	// one client's negotiations cannot hold every slot.
	InFlight int
	// Readings is how many usage readings a second one server may send on
	// average, ReadingBurst how many at once: 200 and 2,000 by default (an
	// honest server sends one per running contract every ReadingEvery). A
	// negative Readings is no limit.
	Readings     float64
	ReadingBurst int
}

func (l *Limits) defaults() {
	if l.Requests == 0 {
		l.Requests = 100
	}
	if l.Burst <= 0 {
		l.Burst = 200
	}
	if l.InFlight <= 0 {
		l.InFlight = 64
	}
	if l.Readings == 0 {
		l.Readings = 200
	}
	if l.ReadingBurst <= 0 {
		l.ReadingBurst = 2000
	}
}

// buckets is a token bucket per party, made on its first request and
// dropped once idle long enough to be full again, so that parties that
// come and go do not grow it for ever.
type buckets struct {
	mu    sync.Mutex
	every rate.Limit
	burst int
	by    map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newBuckets(perSecond float64, burst int) *buckets {
	if perSecond < 0 {
		return nil
	}
	return &buckets{every: rate.Limit(perSecond), burst: burst, by: map[string]*bucket{}}
}

// take spends a token of party's bucket at now, or says how long until
// there is one. A nil buckets allows everything.
func (b *buckets) take(party string, now time.Time) (ok bool, wait time.Duration) {
	if b == nil {
		return true, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := b.by[party]
	if k == nil {
		k = &bucket{lim: rate.NewLimiter(b.every, b.burst)}
		b.by[party] = k
	}
	k.last = now
	r := k.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// setShare makes the buckets a 1/n share of perSecond and burst (rounded
// down, but at least one token), the ones made already included.
func (b *buckets) setShare(perSecond float64, burst, n int, now time.Time) {
	if b == nil || perSecond < 0 {
		return
	}
	every, size := rate.Limit(perSecond/float64(n)), max(1, burst/n)
	b.mu.Lock()
	defer b.mu.Unlock()
	if every == b.every && size == b.burst {
		return
	}
	b.every, b.burst = every, size
	for _, k := range b.by {
		k.lim.SetLimitAt(now, every)
		k.lim.SetBurstAt(now, size)
	}
}

// sweep drops the buckets that have refilled since their last use.
func (b *buckets) sweep(now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock() // setShare changes burst and every
	defer b.mu.Unlock()
	full := time.Duration(float64(b.burst) / float64(b.every) * float64(time.Second))
	for p, k := range b.by {
		if now.Sub(k.last) > full {
			delete(b.by, p)
		}
	}
}

// counts is how many requests each party has in flight.
type counts struct {
	mu  sync.Mutex
	max int
	by  map[string]int
}

// acquire takes one of party's slots, or says it has none left.
func (c *counts) acquire(party string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by[party] >= c.max {
		return false
	}
	c.by[party]++
	return true
}

// setMax sets how many requests a party may have in flight.
func (c *counts) setMax(n int) {
	c.mu.Lock()
	c.max = n
	c.mu.Unlock()
}

func (c *counts) release(party string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.by[party]--; c.by[party] <= 0 {
		delete(c.by, party)
	}
}

// rateLimited is the error of a refused request.
func rateLimited(party, what string, wait time.Duration) error {
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	return &bourse.Error{Code: bourse.ERateLimited, RetryAfterMS: max(ms, 1),
		Message: fmt.Sprintf("%s: %s; retry after %v", party, what, time.Duration(max(ms, 1))*time.Millisecond)}
}
