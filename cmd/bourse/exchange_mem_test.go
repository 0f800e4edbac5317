package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestExchangeMem: a throwaway exchange (--db mem) trades as a new user
// would try it: a server registers in its currency, a client it funded
// makes a contract, and its --fund flags are refused on a database.
func TestExchangeMem(t *testing.T) {
	ns := natstest.Start(t)
	url := ns.ClientURL()
	ctx, cancel := context.WithCancel(context.Background())
	var exOut, exErr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"exchange", "--db", "mem", "--nats", url, "--metrics", "", "--fund", "you=100", "--fund", "bob=5.5"}, &exOut, &exErr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			assert.Equal(t, 0, code, exErr.String())
		case <-time.After(20 * time.Second):
			t.Error("the exchange did not stop")
		}
	})
	bid := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"bid", "--nats", url, "--timeout", "5s"}, args...), &out, &errOut)
		return out.String(), errOut.String(), code
	}
	require.Eventually(t, func() bool { _, _, code := bid("--id", "you", "balance"); return code == 0 }, 10*time.Second, 50*time.Millisecond, "%s", &exErr)
	out, _, _ := bid("--id", "bob", "balance")
	assert.Regexp(t, `wallet/CRED/bob +CRED +2 +5\.50 +0\.00 +5\.50`, out)

	stderr := startServer(t, noNVML, "id: gpu1\nnats: {url: "+url+"}\nnvml: off\ngpus: [{count: 1, model: H100, memory_mib: 81920}]\nheartbeat: 100ms\n")
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "msg=registered") }, 10*time.Second, 20*time.Millisecond, "%s", stderr)
	out, errOut, code := bid("--id", "you", "--json", "offer", "--price", "0.3", "--duration", "100ms", "--time-limit", "10s")
	require.Equal(t, 0, code, errOut)
	var r protocol.OfferReply
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	require.NotNil(t, r.Contract)
	assert.Equal(t, "gpu1", r.Contract.Server)
	assert.Contains(t, exErr.String(), "in-memory ledger ready")

	_, errOut, code = bourseCmd("exchange", "--db", "postgres://nobody@127.0.0.1:1/none", "--fund", "you=1")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--fund is for --db mem")
}
