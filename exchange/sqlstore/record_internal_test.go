package sqlstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// A record written before a contract's cap holds were one list kept its
// client's own apart, in cap_hold: it reads back first in CapHolds, so
// that the settlement releases it (caps.Release). A record written now
// reads back as written.
func TestRecordCapHolds(t *testing.T) {
	old := record(`{"id":"c-1","client":"alice","server":"s","terms":{"client":"alice","currency":"CRED","gpus":1,"time_limit":"1m0s","prepayment":"6","p":[["0","0.01"]],"server":"s"},` +
		`"state":"running","accepted_at":"2026-11-25T04:34:50Z","start_deadline":"2026-11-25T04:35:05Z",` +
		`"cap_hold":"gpus/c-1","cap_holds":["gpus/c-1/acme"],"spend_holds":["spend/c-1/0"],"charge":"0","refund":"0"}`)
	c, err := old.contract("c-1")
	require.NoError(t, err)
	assert.Equal(t, []string{"gpus/c-1", "gpus/c-1/acme"}, c.CapHolds)
	assert.Equal(t, []string{"spend/c-1/0"}, c.SpendHolds)

	onlyOwn := record(`{"id":"c-2","state":"running","cap_hold":"gpus/c-2","charge":"0","refund":"0"}`)
	c, err = onlyOwn.contract("c-2")
	require.NoError(t, err)
	assert.Equal(t, []string{"gpus/c-2"}, c.CapHolds)

	now := contract.Contract{ID: "c-3", State: contract.StateRunning, CapHolds: []string{"gpus/c-3", "gpus/c-3/acme"}}
	js, err := protocol.Marshal(now)
	require.NoError(t, err)
	assert.NotContains(t, string(js), `"cap_hold"`, "one list")
	c, err = record(js).contract("c-3")
	require.NoError(t, err)
	assert.Equal(t, now.CapHolds, c.CapHolds)
}
