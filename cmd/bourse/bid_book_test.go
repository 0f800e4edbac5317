package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestBidWait: through the command alone, an offer that finds every GPU
// taken waits in the book (offer --wait), is listed (waiting), shows in
// the balance, and is followed by watch until its contract settles; a
// second is cancelled.
func TestBidWait(t *testing.T) {
	b := startBidMarket(t)
	b.offerJSON("ada", "--gpus", "16", "--model", "H100", "--price", "0.35", "--time-limit", "1m", "--duration", "3s")

	var r protocol.OfferReply
	require.NoError(t, json.Unmarshal([]byte(b.ok("bob", "--json", "offer", "--gpus", "8", "--model", "H100", "--price", "0.35",
		"--time-limit", "1m", "--duration", "1s", "--wait", "10m")), &r))
	require.Nil(t, r.Contract, "%+v", r)
	require.NotNil(t, r.Queued, "%+v", r)
	id := r.Queued.ID
	out := b.ok("bob", "offer", "--gpus", "8", "--model", "H100", "--price", "0.30", "--time-limit", "1m", "--wait", "10m")
	assert.Contains(t, out, "waits in the book until")
	assert.Contains(t, out, "1 ahead of it", "a lower price goes after")
	other := strings.Fields(strings.SplitN(out, "offer ", 2)[1])[0]

	list := b.ok("bob", "waiting")
	assert.Contains(t, list, id)
	assert.Contains(t, list, other)
	assert.Contains(t, b.ok("bob", "balance"), "2 waiting offer(s) will need")
	assert.Contains(t, b.ok("bob", "cancel", other), other+" cancelled")

	watched := b.ok("bob", "watch", id)
	assert.Contains(t, watched, "waiting")
	assert.Contains(t, watched, "matched")
	assert.Contains(t, watched, "settled")
	k := b.contract("bob", id)
	assert.Equal(t, contract.StateSettled, k.State)
	assert.False(t, k.QueuedAt.IsZero())
	assert.Contains(t, b.ok("bob", "waiting"), "no offer waits")
}
