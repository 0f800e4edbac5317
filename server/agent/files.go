package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/nats-io/nats.go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
)

var _ server.Files = (*Agent)(nil)

// fetchTries bounds the tries of one page of a fetch that the exchange
// did not answer, or answered unavailable or rate_limited.
const fetchTries = 8

// Fetch reads the files of contract id's job from the exchange, a page
// at a time (protocol.VerbFetch, on the server's own subject), into w,
// for its runner: server.Files. The exchange hands a server the files of
// its own contracts alone; the runner checks what came against the
// terms.
func (a *Agent) Fetch(ctx context.Context, id string, w io.Writer) error {
	var after uint64
	for {
		reply, err := a.fetchPage(ctx, protocol.FetchRequest{Contract: id, After: after})
		if err != nil {
			return err
		}
		for _, c := range reply.Chunks {
			if _, err := w.Write(c); err != nil {
				return err
			}
		}
		if reply.Done {
			return nil
		}
		if reply.Next <= after {
			return &bourse.Error{Code: bourse.EUnavailable, Op: "agent.Fetch", Message: "the exchange's page of files did not move on"}
		}
		after = reply.Next
	}
}

// fetchPage asks for one page, again while the exchange says to retry.
func (a *Agent) fetchPage(ctx context.Context, req protocol.FetchRequest) (protocol.FetchReply, error) {
	subject := protocol.ServerSubject(a.id, protocol.VerbFetch)
	body, err := protocol.Marshal(req)
	if err != nil {
		return protocol.FetchReply{}, err
	}
	for try := 1; ; try++ {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var msg *nats.Msg
		msg, err = a.nc.RequestWithContext(rctx, subject, body)
		cancel()
		if err == nil {
			if err = natswire.DecodeError(msg); err == nil {
				var reply protocol.FetchReply
				if err := json.Unmarshal(msg.Data, &reply); err != nil {
					return protocol.FetchReply{}, fmt.Errorf("agent: decode a page of files: %w", err)
				}
				return reply, nil
			}
		}
		wait := time.Duration(try) * 100 * time.Millisecond
		var be *bourse.Error
		switch {
		case errors.As(err, &be) && be.Code == bourse.ERateLimited:
			wait = max(wait, time.Duration(be.RetryAfterMS)*time.Millisecond)
		case errors.As(err, &be) && !retryable(be.Code):
			return protocol.FetchReply{}, err // the exchange's no: not this server's, or not stored
		}
		if try >= fetchTries || ctx.Err() != nil {
			return protocol.FetchReply{}, fmt.Errorf("agent: fetch files of %s: %w", req.Contract, err)
		}
		select {
		case <-ctx.Done():
			return protocol.FetchReply{}, ctx.Err()
		case <-time.After(wait): //wallclock: pacing: between tries of a page
		}
	}
}

// hasFiles says whether the start's job names files: its fetch may take
// long, so its start goes on off the start subscription (onStart).
func hasFiles(s protocol.Start) bool {
	j := s.Contract.Terms.Job
	return j != nil && j.Files != nil
}

// startWithFiles starts a contract whose job names files, off the start
// subscription, so that other contracts' starts do not wait for its
// fetch: the node answers a start of it repeated meanwhile "starting".
// The exchange's wait for the answer is shorter than most fetches, so the
// start is also reported on the started subject, as a booking's is.
func (a *Agent) startWithFiles(m *nats.Msg, s protocol.Start) {
	a.starting.Add(1)
	a.work.Add(1)
	go func() {
		defer a.work.Done()
		defer a.starting.Add(-1)
		if started, ok := a.answerStart(m, s); ok && !started.Preparing && !started.Booked {
			a.reportStarted(started)
		}
	}()
}
