package console

import (
	"container/list"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// throttle slows password guessing. Each bucket allows 5 logins at once
// and one more every 12 seconds; a login is refused with 429, before its
// password is checked, when any of its buckets is empty. A login from a
// browser that has logged in as that user before (it holds her device
// cookie, device.go) draws on that device's bucket alone; any other draws
// on its address's bucket (the guesser) and on the name's (the target), so
// that guesses spread over many addresses still meet the name's limit,
// while the user herself, from her own browser, is not locked out by
// whoever types her name.
//
// The buckets are bounded in number (max). A refused login creates none,
// so one address flooding junk names holds five at most; past the bound
// the least recently used bucket goes, never that of a user's name that
// is being guessed (forgetting it would hand the guesser a fresh five).
type throttle struct {
	// clock is the time buckets refill by (the console's Now).
	clock   func() time.Time
	mu      sync.Mutex
	max     int
	buckets map[string]*list.Element // of *bucket
	order   list.List                // least recently used first
}

// maxThrottled is the default bound on the buckets remembered.
const maxThrottled = 10000

const (
	throttleBurst = 5
	throttleEvery = 12 * time.Second
)

type bucket struct {
	key string
	l   *rate.Limiter
	// user marks the name of one of the console's users: its bucket is
	// not evicted while it holds less than a full burst.
	user bool
}

// throttleKey names a bucket: "addr:…", "user:…" or "device:…".
type throttleKey struct {
	key  string
	user bool
}

// allow takes a login from each of keys' buckets, or from none if one of
// them is empty.
func (t *throttle) allow(keys ...throttleKey) bool {
	now := t.clock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.buckets == nil {
		t.buckets = map[string]*list.Element{}
		if t.max == 0 {
			t.max = maxThrottled
		}
	}
	for _, k := range keys {
		if e, ok := t.buckets[k.key]; ok && e.Value.(*bucket).l.TokensAt(now) < 1 {
			return false
		}
	}
	for _, k := range keys {
		e, ok := t.buckets[k.key]
		if !ok {
			if len(t.buckets) >= t.max && !t.evict(now) {
				return false // every bucket is a user's under attack: refuse rather than forget one
			}
			e = t.order.PushBack(&bucket{key: k.key, l: rate.NewLimiter(rate.Every(throttleEvery), throttleBurst), user: k.user})
			t.buckets[k.key] = e
		}
		e.Value.(*bucket).l.AllowN(now, 1)
		t.order.MoveToBack(e)
	}
	return true
}

// evict forgets the least recently used bucket that is not a user's
// being guessed.
func (t *throttle) evict(now time.Time) bool {
	for e := t.order.Front(); e != nil; e = e.Next() {
		b := e.Value.(*bucket)
		if b.user && b.l.TokensAt(now) < throttleBurst {
			continue
		}
		t.order.Remove(e)
		delete(t.buckets, b.key)
		return true
	}
	return false
}

// len is how many buckets are remembered.
func (t *throttle) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.buckets)
}
