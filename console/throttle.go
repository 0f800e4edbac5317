package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// throttle slows password guessing: each user name and each remote
// address may try 5 logins at once and one more every 12 seconds. Past
// that a login is refused with 429 before its password is checked.
type throttle struct {
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
}

// maxThrottled bounds the names and addresses remembered; a flood of new
// ones starts the count afresh rather than growing without end.
const maxThrottled = 10000

func (t *throttle) allow(r *http.Request, user string) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.limiters == nil || len(t.limiters) > maxThrottled {
		t.limiters = map[string]*rate.Limiter{}
	}
	ok := true
	for _, k := range []string{"user:" + user, "addr:" + host} {
		l := t.limiters[k]
		if l == nil {
			l = rate.NewLimiter(rate.Every(12*time.Second), 5)
			t.limiters[k] = l
		}
		ok = l.Allow() && ok
	}
	return ok
}
