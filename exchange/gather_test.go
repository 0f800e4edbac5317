package exchange

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestGatherRelaysNamableCounters relays only the counter-offers a client
// can name back to take them (bourse bid offer --take ID): a server's
// counter-offer whose id is empty, too long, or holds spaces or control
// characters is dropped, and the server's rejection says so.
func TestGatherRelaysNamableCounters(t *testing.T) {
	a := Answer{Server: "boreal", Decision: protocol.Decision{Reason: "price below the posted price", Counters: []contract.Counter{
		{ID: "k-1.a_B"}, {ID: ""}, {ID: strings.Repeat("k", protocol.MaxCounterID+1)}, {ID: "k 2"}, {ID: "k\x1b[2J"},
	}}}
	ks, rs := gather(nil, nil, a)
	require.Len(t, ks, 1)
	assert.Equal(t, "k-1.a_B", ks[0].ID)
	assert.Equal(t, "boreal", ks[0].Server)
	assert.Equal(t, "boreal", ks[0].Terms.Server)
	assert.Empty(t, rs, "a server that made a counter-offer is no rejection")

	a.Decision.Counters = a.Decision.Counters[1:]
	ks, rs = gather(nil, nil, a)
	assert.Empty(t, ks)
	require.Len(t, rs, 1)
	assert.Contains(t, rs[0].Reason, "4 counter-offer(s) not relayed")
}
