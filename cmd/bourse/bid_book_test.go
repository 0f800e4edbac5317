package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

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
	// show knows a waiting offer, as watch, wait and cancel do.
	shown := b.ok("bob", "show", other)
	assert.Regexp(t, `(?m)^Offer +`+other+` \(its contract's id, once a server accepts it\)$`, shown)
	assert.Regexp(t, `(?m)^State +waiting in the book, 1 ahead of it; nothing is held for it$`, shown)
	var w contract.Waiting
	require.NoError(t, json.Unmarshal([]byte(b.ok("bob", "--json", "show", other)), &w))
	assert.Equal(t, other, w.ID)
	assert.Equal(t, 1, w.Ahead)
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

// TestPrintCountered: a waiting offer's counter-offers, as watch tells
// them, name the id and number to take each by.
func TestPrintCountered(t *testing.T) {
	k := func(id, server, price string) contract.Counter {
		return contract.Counter{ID: id, Server: server, Terms: contract.Terms{GPUs: 1, Currency: "CRED", TimeLimit: time.Minute,
			P: contract.Flat(decimal.RequireFromString(price)), Prepayment: decimal.RequireFromString("18")}}
	}
	var out strings.Builder
	ev := protocol.Event{At: time.Now(), Counters: []contract.Counter{k("ask-1", "cheap", "0.3"), k("ask-2", "dear", "0.5")}}
	printCountered(&out, ev, "bourse bid --id you", &scales{known: map[string]int32{"CRED": 2}})
	assert.Contains(t, out.String(), "cheapest 0.3/GPU-s (1080.00/GPU-h) by cheap: take it with bourse bid --id you offer --take 1 (or --take ask-1)")
	assert.Regexp(t, `(?m)^2 +ask-2 +dear `, out.String())
}
