package bidder

import (
	"context"
	"io"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/trade"
)

// Logs reads a page of a contract's stdout and stderr: the chunks the
// output stream stored after sequence number after (0 for the start).
// FollowLogs reads them all.
func (c *Client) Logs(ctx context.Context, contract string, after uint64) (protocol.OutputReply, error) {
	var r protocol.OutputReply
	err := c.request(ctx, protocol.VerbLogs, protocol.OutputRequest{Contract: contract, After: after}, &r)
	return r, err
}

// ResultsPage reads a page of a contract's results archive; Results
// reads it whole.
func (c *Client) ResultsPage(ctx context.Context, contract string, after uint64) (protocol.OutputReply, error) {
	var r protocol.OutputReply
	err := c.request(ctx, protocol.VerbResults, protocol.OutputRequest{Contract: contract, After: after}, &r)
	return r, err
}

// Follow says how FollowLogs and Results wait for output to come.
type Follow struct {
	// Wait, if set, waits for more until the output is done; otherwise
	// only what is there now is read.
	Wait bool
	// Every is how often to ask again when there was nothing new; 500 ms
	// if zero.
	Every time.Duration
	// Lost is how long after the contract ended to wait for the end of
	// its output, which a server that lost it (or does not send output)
	// never sends; 30 s if zero.
	Lost time.Duration
}

// ErrOutputIncomplete is what FollowLogs and Results return when the
// contract ended and its server sent no end of the output within
// Follow.Lost: what came is all there is. Its code is unavailable.
var ErrOutputIncomplete = &bourse.Error{Code: bourse.EUnavailable, Op: "bidder.Follow",
	Message: "the contract has ended and its server has not sent the end of its output: what came may be all there is"}

// FollowLogs writes a contract's stdout to stdout and its stderr to
// stderr, each byte once and in order (chunks a server sent again are
// trimmed), until the output is done, or, without f.Wait, until what is
// there has been read. It returns the output's end once it came: nil
// while the job runs.
func (c *Client) FollowLogs(ctx context.Context, contract string, f Follow, stdout, stderr io.Writer) (*protocol.OutputEnd, error) {
	pos := map[string]int64{}
	out := map[string]io.Writer{protocol.StreamStdout: stdout, protocol.StreamStderr: stderr}
	return c.follow(ctx, contract, f, c.Logs, func(ch protocol.OutputChunk) error {
		w, ok := out[ch.Stream]
		if !ok {
			return nil
		}
		data, at := ch.Data, pos[ch.Stream]
		if ch.Offset > at {
			// A gap: bytes the stream no longer holds (past its age or
			// size) or a server's fault. Go on from here.
			at = ch.Offset
		}
		skip := at - ch.Offset
		if skip >= int64(len(data)) {
			return nil // all of it came before
		}
		data = data[skip:]
		pos[ch.Stream] = at + int64(len(data))
		_, err := w.Write(data)
		return err
	})
}

// Results writes a contract's results archive (a tar of the files its job
// left in $BOURSE_RESULTS) into w, each chunk at its offset, and returns
// the archive's end, which names the files left out of it. Without
// f.Wait, a job still running has no archive yet: it returns nil.
func (c *Client) Results(ctx context.Context, contract string, f Follow, w io.WriterAt) (*protocol.OutputEnd, error) {
	return c.follow(ctx, contract, f, c.ResultsPage, func(ch protocol.OutputChunk) error {
		_, err := w.WriteAt(ch.Data, ch.Offset)
		return err
	})
}

// follow reads pages until done, handing each chunk to put.
func (c *Client) follow(ctx context.Context, contract string, f Follow, page func(context.Context, string, uint64) (protocol.OutputReply, error),
	put func(protocol.OutputChunk) error) (*protocol.OutputEnd, error) {
	if f.Every <= 0 {
		f.Every = 500 * time.Millisecond
	}
	if f.Lost <= 0 {
		f.Lost = 30 * time.Second
	}
	var after uint64
	var endedAt time.Time // when the contract was first seen ended with no end of output
	for {
		r, err := page(ctx, contract, after)
		if err != nil {
			return nil, err
		}
		for _, ch := range r.Chunks {
			if err := put(ch); err != nil {
				return nil, err
			}
		}
		after = r.Next
		switch {
		case r.Done:
			return r.End, nil
		case len(r.Chunks) > 0:
			continue // there may be more at once
		case !f.Wait:
			return nil, nil
		case r.State == trade.StateSettled || r.State == trade.StateVoided:
			if endedAt.IsZero() {
				endedAt = time.Now()
			} else if time.Since(endedAt) > f.Lost {
				return nil, ErrOutputIncomplete
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(f.Every):
		}
	}
}
