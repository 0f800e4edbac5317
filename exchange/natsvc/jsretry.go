package natsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream's API may not answer for a while: a clustered stream has no
// leader yet (for some seconds after the NATS nodes restart), or several
// exchanges create the same stream at once (nats-server 2.9 leaves such
// parallel creates unanswered; later versions mostly do not). A deployment
// starts its instances together, so the creation of the usage stream and
// its consumer is retried with a growing, jittered wait, saying what it
// waits for, until it succeeds, fails for good (a stream configured
// otherwise, say), or JetStreamWait has passed.

// attemptTimeout bounds one try of a JetStream API call.
const attemptTimeout = 5 * time.Second

// withRetry calls try until it succeeds, fails for good, or wait ends.
func withRetry(ctx context.Context, wait time.Duration, log *slog.Logger, what string, try func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	pause := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := try(actx)
		acancel()
		if err == nil {
			if attempt > 1 {
				log.Info("JetStream answered", "what", what, "attempts", attempt)
			}
			return nil
		}
		if !transientJS(err) {
			return err
		}
		log.Warn("JetStream does not answer yet; retrying (a NATS cluster electing a leader, or exchanges starting together)",
			"what", what, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("gave up after %d tries in %v: %w", attempt, wait, err)
		case <-time.After(pause/2 + rand.N(pause/2+1)):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// transientJS reports whether a JetStream API error may pass by itself:
// no answer in time, no responder, or one of the API's answers that a
// cluster without a leader, or with a peer away, gives; not a refusal,
// such as a stream configured otherwise than asked (which the API also
// answers with a 500, so the codes are listed).
func transientJS(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode {
		case 10004, // cluster incomplete
			10006, 10007, 10008, 10009, // cluster not active, not assigned, not available, not the leader
			10023,        // insufficient resources (a peer still away)
			10041,        // raft
			10118, 10194, // stream offline
			10119, 10195: // consumer offline
			return true
		}
		return false
	}
	return true
}
