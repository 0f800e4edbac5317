package exchange

import "time"

// live says whether s has been heard since since: with since the
// registry's cutoff (lostAfter ago, through this instance's own outage),
// whether it is live. Routing, matching, the servers' list, market data
// and the count of live servers all ask it, so that a server whom offers
// go to is one clients see, and no other.
func (s serverState) live(since time.Time) bool { return !s.seen.Before(since) }
