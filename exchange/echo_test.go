package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
)

// TestEchoIsTheServersWord: a heartbeat heard by its time alone
// (HeartbeatAgain: its bytes those of the server's last heartbeat heard
// in full) is the server's word as much as that one was, and the room it
// says stands over what the exchange reckoned since. Here gpu1 said 2
// GPUs free, won a contract of one, ran its job and ended it, and says 2
// free again while its final reading is still on its way: the exchange
// must route an offer of 2 GPUs to it. Kept at the room it reckoned
// (one), it refused clients while the GPUs stood free, and the gap grew
// with every reckoning that a heartbeat would have corrected
// (BenchmarkOffers at 16 clients on memory: "no live server has 1 GPUs
// free now" with 128 idle).
func TestEchoIsTheServersWord(t *testing.T) {
	h := housetest.New(t, exchange.Config{})
	node := h.Server("gpu1", "H100", 2, nil)
	h.Wallet("dave", "100")
	h.Beat() // its word: 2 free

	tm := job(1, "0.01")
	tm.Job.Profile.Duration = time.Second
	require.NotNil(t, offer(t, h, "dave", "w1", tm, 0).Contract, "one GPU of two")
	// The job ends; its final reading waits in the stream.
	h.Advance(2 * time.Second)
	var finals []contract.Reading
	node.StopJobs(context.Background(), h.Now, node.Tick(h.Now()).Stops, func(f contract.Reading) { finals = append(finals, f) })
	require.Len(t, finals, 1)
	require.Equal(t, 2, node.Hello(h.Now()).Free, "the job ended: its server has both GPUs free")

	heard, err := h.House.HeartbeatAgain("gpu1", h.Now())
	require.NoError(t, err)
	require.True(t, heard)
	two := job(2, "0.01")
	reply := offer(t, h, "dave", "w2", two, 0)
	require.NotNil(t, reply.Contract, "2 GPUs free by its server's word, refused: %+v", reply)
}
