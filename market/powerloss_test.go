package market_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/lazyfs"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// phasePowerLoss is TestFaults' power loss of the NATS host: nats-server
// killed (SIGKILL) and what it had written and not synced dropped with
// it, then started again on what its disk kept.
const phasePowerLoss = "the NATS host lost power (nats-server killed, its unsynced writes gone)"

// lazyStore is a JetStream store on a lazy file system (internal/lazyfs),
// which keeps what nats-server writes in memory until it syncs it, as a
// page cache does, and can lose it.
type lazyStore struct {
	t         *testing.T
	disk, mnt string
	fs        *lazyfs.FS
}

// mountLazyStore mounts a lazy file system for a JetStream store, or
// returns nil where it cannot run (not root, no /dev/fuse), saying so,
// except in CI, where the test fails. It unmounts when the test ends,
// after the nats-server started after it has been killed.
func mountLazyStore(t *testing.T, required bool) *lazyStore {
	t.Helper()
	if required {
		lazyfs.Require(t)
	} else if err := lazyfs.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("lazyfs: %v: in CI the power loss must run", err)
		}
		t.Logf("the power loss is left out: lazyfs: %v (it needs root and /dev/fuse)", err)
		return nil
	}
	l := &lazyStore{t: t, disk: t.TempDir(), mnt: t.TempDir()}
	l.mount()
	t.Cleanup(func() { assert.NoError(t, l.fs.Unmount(), "unmount the lazy store") })
	return l
}

func (l *lazyStore) mount() {
	fs, err := lazyfs.Mount(l.disk, l.mnt)
	require.NoError(l.t, err)
	l.fs = fs
}

// powerLoss is the phase. What the node wrote so far is written back
// first (a host up for a while has its older writes on disk: a kernel
// writes dirty pages back within half a minute). Then the exchange falls
// behind (paused) with a job (job: a contract running) to end: its pulls
// expire, and readings wait in the stream, acknowledged to their servers
// and not yet counted, the job's final reading among them (final says
// whether the test's reading log has it), which is what a power loss can
// take. Then nats-server is killed and its unsynced writes dropped at
// once, as a power loss does; it starts again on what its disk kept, and
// the exchange goes on. Where the configuration syncs every write
// (durable), the stream must still hold every reading it acknowledged
// that the exchange had not; where it does not, it must have lost some,
// or the fault did nothing. Every contract is paid its server's final
// reading all the same: the phase's and the test's checks say so.
func (l *lazyStore) powerLoss(nodes *natstest.Procs, ex *exchangeProc, url string, login nats.Option, job func() string, final func(id string) bool, durable bool) {
	t := l.t
	t.Helper()
	require.NoError(t, l.fs.Writeback())
	// A job that ends after the exchange's pulls have expired: its final
	// reading waits in the stream.
	id := job()
	ex.pause()
	waitFor(t, 10*time.Second, "a reading waiting undelivered for the paused exchange", func() bool {
		return usageOf(t, url, login).pending > 0
	})
	require.False(t, final(id), "%s ended before the exchange's pulls expired: make its job longer", id)
	waitFor(t, 20*time.Second, id+"'s final reading, acknowledged while the exchange is behind", func() bool { return final(id) })
	// The readings the stream holds for the exchange: past its
	// consumer's floor, and not taken and acknowledged out of order.
	at := usageOf(t, url, login)
	held := usageHeld(t, url, login, at.floor+1, at.last)
	nodes.Kill(0)
	lost, err := l.fs.Crash()
	require.NoError(t, err)
	l.mount()
	var kept usage
	var still []uint64
	nodes.Aside(func(url string) {
		kept = usageOf(t, url, login)
		still = usageHeld(t, url, login, at.floor+1, at.last)
	})
	nodes.Start(0)
	ex.resume()
	missing := 0
	for _, seq := range held {
		if !slices.Contains(still, seq) {
			missing++
		}
	}
	t.Logf("fault: %s: %d KiB written and not synced were lost; of the %d readings the usage stream had acknowledged and held for the exchange (%s's final among them), %d were gone; its last sequence went from %d to %d",
		phasePowerLoss, lost/1024, len(held), id, missing, at.last, kept.last)
	if durable {
		assert.Zero(t, missing, "sync_interval: always, and the usage stream lost readings it acknowledged")
		assert.GreaterOrEqual(t, kept.last, at.last, "sync_interval: always, and the usage stream's sequence went back")
	} else {
		assert.Positive(t, missing, "the usage stream kept every reading it acknowledged: the power loss lost nothing, and tested nothing")
	}
}

// usage is what the usage stream and the exchange's consumer say.
type usage struct {
	last    uint64 // the stream's last sequence: the last reading it acknowledged
	floor   uint64 // the exchange's consumer's acknowledgement floor
	pending uint64 // readings the consumer has not handed out
}

// usageOf asks the usage stream and the exchange's consumer at NATS url.
func usageOf(t *testing.T, url string, login nats.Option) usage {
	t.Helper()
	var u usage
	withUsage(t, url, login, func(ctx context.Context, s jetstream.Stream) error {
		info, err := s.Info(ctx)
		if err != nil {
			return err
		}
		c, err := s.Consumer(ctx, "exchange")
		if err != nil {
			return err
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return err
		}
		u = usage{last: info.State.LastSeq, floor: ci.AckFloor.Stream, pending: ci.NumPending}
		return nil
	})
	return u
}

// usageHeld lists the readings from sequence from to to that the usage
// stream at NATS url holds.
func usageHeld(t *testing.T, url string, login nats.Option, from, to uint64) []uint64 {
	t.Helper()
	var held []uint64
	withUsage(t, url, login, func(ctx context.Context, s jetstream.Stream) error {
		held = held[:0]
		for seq := from; seq <= to; seq++ {
			_, err := s.GetMsg(ctx, seq)
			switch {
			case err == nil:
				held = append(held, seq)
			case !errors.Is(err, jetstream.ErrMsgNotFound):
				return err
			}
		}
		return nil
	})
	return held
}

// withUsage calls ask with the usage stream at NATS url until it
// succeeds, for up to 10 s: a node just started may not have its stream
// back yet.
func withUsage(t *testing.T, url string, login nats.Option, ask func(context.Context, jetstream.Stream) error) {
	t.Helper()
	nc, err := nats.Connect(url, login)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		s, err := js.Stream(ctx, protocol.UsageStream)
		if err == nil {
			if err = ask(ctx, s); err == nil {
				return
			}
		}
		if ctx.Err() != nil {
			require.NoError(t, err, "the usage stream at %s", url)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
