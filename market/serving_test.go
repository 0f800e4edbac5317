package market_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/market"
	"github.com/bourse/bourse/market/markettest"
	"github.com/bourse/bourse/protocol"
)

// TestCutInstanceLeaves: an exchange instance cut off from the database
// leaves the queue group, so that the instance that can serve answers
// every request: a client that never retries is answered each time while
// one instance of two is cut (it would be told "unavailable" about half
// the time if the cut one stayed). The cut one says why it is not ready;
// healed, it rejoins and answers again. The bots trade throughout, and
// every contract settles as its server's own record says.
func TestCutInstanceLeaves(t *testing.T) {
	ctx := context.Background()
	dbURL := pgtest.FreshDB(t)
	m := markettest.Start(t, market.Config{Store: openSQL(t, dbURL), JobScale: 0.4})
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	p := pgtest.NewProxy(t, u.Host)
	cut, err := m.AddExchange(ctx, openSQL(t, p.Through(t, dbURL)+"&connect_timeout=1"))
	require.NoError(t, err)
	require.NoError(t, cut.Ready(ctx))

	m.Fund("CRED", dectest.D("10"), "probe")
	nc, err := nats.Connect(m.URL(), nats.CustomInboxPrefix(protocol.InboxPrefix("probe")))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	c, err := bidder.Dial(bidder.Config{ID: "probe", Conn: nc, Timeout: 3 * time.Second, Retries: -1})
	require.NoError(t, err)
	answered := func(n int) int {
		ok := 0
		for range n {
			if _, err := c.Balance(ctx, ""); err == nil {
				ok++
			}
		}
		return ok
	}
	require.Equal(t, 20, answered(20), "both instances serve")

	p.Cut()
	waitFor(t, 15*time.Second, "the cut instance to leave the queue group", func() bool { return cut.Serving() != nil })
	assert.ErrorContains(t, cut.Ready(ctx), "database")
	assert.Equal(t, 40, answered(40), "every request answered by the instance that can serve")

	p.Heal()
	waitFor(t, 15*time.Second, "the healed instance to rejoin", func() bool { return cut.Serving() == nil })
	assert.NoError(t, cut.Ready(ctx))
	assert.Equal(t, 20, answered(20))
	assert.Positive(t, cut.Requests(), "the healed instance answers its share again")
	m.Close()
	check(t, m.Market, openSQL(t, dbURL))
}
