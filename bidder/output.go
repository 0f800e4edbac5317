package bidder

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
)

// Logs reads a page of a contract's stdout and stderr: the chunks the
// output stream stored after sequence number after (0 for the start).
// FollowLogs reads them all.
func (c *Client) Logs(ctx context.Context, id string, after uint64) (protocol.OutputReply, error) {
	var r protocol.OutputReply
	err := c.request(ctx, protocol.VerbLogs, protocol.OutputRequest{Contract: id, After: after}, &r)
	return r, err
}

// ResultsPage reads a page of a contract's results archive; Results
// reads it whole.
func (c *Client) ResultsPage(ctx context.Context, id string, after uint64) (protocol.OutputReply, error) {
	var r protocol.OutputReply
	err := c.request(ctx, protocol.VerbResults, protocol.OutputRequest{Contract: id, After: after}, &r)
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
	// MaxBytes bounds the bytes taken of each stream (each of stdout and
	// stderr; the results archive). The exchange relays no more than the
	// cap the contract's server declared (protocol.OutputReply.Cap),
	// which bounds it anyway; zero takes that cap. A chunk past the bound
	// ends the read with an error: a server may not make a client write
	// more than it asked for.
	MaxBytes int64
}

// ErrOutputIncomplete is what FollowLogs and Results return when the
// contract ended and its server sent no end of the output within
// Follow.Lost, and the output stream dropped none of it: the server may
// still send it. Its code is unavailable.
var ErrOutputIncomplete = &bourse.Error{Code: bourse.EUnavailable, Op: "bidder.Follow",
	Message: "the contract has ended and its server has not sent the end of its output: what came may be all there is"}

// FollowLogs writes a contract's stdout to stdout and its stderr to
// stderr, each byte once and in order (chunks a server sent again are
// trimmed), until the output is done, or, without f.Wait, until what is
// there has been read. It returns the output's end once it came: nil
// while the job runs, or for a job that wrote nothing (it never ran, or
// ran on the synthetic runner). Bytes missing from the output (a gap
// between chunks, less than the end counts, an end that the output
// stream dropped) are written around and reported at the end, as an
// error with the code output_lost that says what is missing.
func (c *Client) FollowLogs(ctx context.Context, id string, f Follow, stdout, stderr io.Writer) (*protocol.OutputEnd, error) {
	out := map[string]io.Writer{protocol.StreamStdout: stdout, protocol.StreamStderr: stderr}
	t := tally{pos: map[string]int64{}}
	end, err := c.follow(ctx, id, f, c.Logs, &t, func(ch protocol.OutputChunk, data []byte) error {
		w, ok := out[ch.Stream]
		if !ok {
			return nil
		}
		_, err := w.Write(data)
		return err
	})
	if err == nil && end != nil {
		t.short(protocol.StreamStdout, end.Stdout)
		t.short(protocol.StreamStderr, end.Stderr)
	}
	if err == nil {
		err = t.err()
	}
	return end, err
}

// Results writes a contract's results archive (a tar of the files its job
// left in $BOURSE_RESULTS) into w, in order, and returns the archive's
// end, which names the files left out of it. Without f.Wait, a job still
// running has no archive yet: it returns nil. The archive must come whole
// and in order, within f.MaxBytes: a gap (bytes the output stream no
// longer holds) is an error with the code output_lost, more than the
// bound one with the code invalid, and nothing more is written.
func (c *Client) Results(ctx context.Context, id string, f Follow, w io.Writer) (*protocol.OutputEnd, error) {
	t := tally{pos: map[string]int64{}, strict: true, fallback: protocol.DefaultResultsCap}
	end, err := c.follow(ctx, id, f, c.ResultsPage, &t, func(ch protocol.OutputChunk, data []byte) error {
		_, err := w.Write(data)
		return err
	})
	if err == nil && end != nil {
		if end.Results > t.bound {
			return nil, bourse.Errorf(bourse.EInvalid, "bidder.Results", "the server says its results archive is %d bytes, more than the %d bytes taken", end.Results, t.bound)
		}
		t.short(protocol.StreamResults, end.Results)
	}
	if err == nil {
		err = t.err()
	}
	return end, err
}

// follow reads pages until done, handing each chunk to put once t has
// placed it.
func (c *Client) follow(ctx context.Context, id string, f Follow, page func(context.Context, string, uint64) (protocol.OutputReply, error),
	t *tally, put func(protocol.OutputChunk, []byte) error) (*protocol.OutputEnd, error) {
	if f.Every <= 0 {
		f.Every = 500 * time.Millisecond
	}
	if f.Lost <= 0 {
		f.Lost = 30 * time.Second
	}
	var after uint64
	var endedAt time.Time // when the contract was first seen ended with no end of output
	for {
		r, err := page(ctx, id, after)
		if err != nil {
			return nil, err
		}
		t.bound = r.Cap
		if t.bound <= 0 {
			t.bound = t.fallback // an exchange that does not say
		}
		if f.MaxBytes > 0 && (t.bound <= 0 || f.MaxBytes < t.bound) {
			t.bound = f.MaxBytes
		}
		for _, ch := range r.Chunks {
			data, err := t.place(ch)
			if err != nil {
				return nil, err
			}
			if len(data) > 0 {
				if err := put(ch, data); err != nil {
					return nil, err
				}
			}
		}
		after = r.Next
		ended := r.State.Ended()
		switch {
		case r.Done:
			return r.End, nil
		case len(r.Chunks) > 0:
			continue // there may be more at once
		case r.Dropped && ended && !f.Wait:
			// The end would be stored after the rest: gone with it.
			return nil, t.lostEnd()
		case !f.Wait:
			return nil, nil
		case ended:
			if endedAt.IsZero() {
				endedAt = time.Now()
			} else if time.Since(endedAt) > f.Lost {
				if r.Dropped {
					return nil, t.lostEnd()
				}
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

// tally places the chunks of a part's streams: each byte once, in order,
// within a bound; and it keeps what is missing.
type tally struct {
	pos      map[string]int64 // bytes of each stream placed, from 0
	bound    int64            // the most of each stream to take; 0: no bound
	fallback int64            // the bound where the exchange says no cap
	strict   bool             // a gap ends the read (an archive cannot have holes)
	lost     []string         // what is missing
}

// place returns the bytes of ch that are new, in order: a chunk sent
// again is trimmed to what had not come; past a gap, the gap is noted (an
// error if strict).
func (t *tally) place(ch protocol.OutputChunk) ([]byte, error) {
	at := t.pos[ch.Stream]
	if ch.Offset > at {
		if t.strict {
			return nil, &bourse.Error{Code: bourse.EOutputLost, Op: "bidder.Follow",
				Message: fmt.Sprintf("%s bytes %d to %d are missing: the output stream no longer holds them (the server's quota or the stream's age) or the server never sent them", ch.Stream, at, ch.Offset)}
		}
		t.lost = append(t.lost, fmt.Sprintf("%s bytes %d to %d", ch.Stream, at, ch.Offset))
		at = ch.Offset
	}
	skip := at - ch.Offset
	if skip >= int64(len(ch.Data)) {
		return nil, nil // all of it came before
	}
	data := ch.Data[skip:]
	if t.bound > 0 && at+int64(len(data)) > t.bound {
		return nil, bourse.Errorf(bourse.EInvalid, "bidder.Follow", "the server sent more than %d bytes of %s, the most taken: the rest is refused", t.bound, ch.Stream)
	}
	t.pos[ch.Stream] = at + int64(len(data))
	return data, nil
}

// short notes the bytes of stream that its end counts and that did not
// come.
func (t *tally) short(stream string, want int64) {
	if have := t.pos[stream]; want > have {
		t.lost = append(t.lost, fmt.Sprintf("%s bytes %d to %d", stream, have, want))
	}
}

// lostEnd is the error for an ended contract's output whose end has not
// come while the output stream dropped some of what was stored since the
// contract was made: the end is stored after the rest, so it went with it
// (or, if the server is far behind, has yet to come).
func (t *tally) lostEnd() error {
	t.lost = append(t.lost, "the end of the output, with whatever of it had not been read: the job has ended, its end has not come, "+
		"and the server's output stream has dropped output stored since the contract was made (the server's quota or the stream's age)")
	return t.err()
}

func (t *tally) err() error {
	if len(t.lost) == 0 {
		return nil
	}
	return &bourse.Error{Code: bourse.EOutputLost, Op: "bidder.Follow", Message: "output lost: " + strings.Join(t.lost, "; ")}
}
