package agent

import (
	"context"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server/spool"
)

// openSpool locks the output directory and ends the output of the jobs the
// agent's last run left, before any job starts.
func (a *Agent) openSpool() error {
	if a.cfg.Output == nil {
		return nil
	}
	cfg := *a.cfg.Output
	cfg.Send, cfg.Logger = a.sendOutput, a.log
	sp, err := spool.Open(cfg)
	if err != nil {
		return err
	}
	a.spool = sp
	return nil
}

// runSpool sends output until ctx ends; then, the jobs stopped, one last
// pass within the shutdown's grace, and what is left waits on disk for the
// next run.
func (a *Agent) runSpool(ctx context.Context) {
	a.spool.Run(ctx)
	last, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.cfg.ShutdownTimeout)
	defer cancel()
	a.spool.Pass(last)
}

// declare says in a job's start what the spool will send of its output
// at most, for the exchange to hold the server to (protocol.Started).
func (a *Agent) declare(st *protocol.Started) {
	if a.spool != nil {
		st.Output = a.spool.Caps()
	}
}

// sendOutput puts a chunk of a job's output on the server's own output
// stream, under an id the stream de-duplicates by, and returns once the
// stream has it. The exchange makes the stream when the server says
// hello; until then the send fails and the spool tries again.
func (a *Agent) sendOutput(ctx context.Context, c spool.Chunk) error {
	msg := nats.NewMsg(protocol.OutputSubject(a.id, c.Contract, c.Part))
	msg.Data = c.Data
	msg.Header.Set(protocol.StreamHeader, c.Stream)
	if c.Stream != protocol.StreamEnd {
		msg.Header.Set(protocol.OffsetHeader, strconv.FormatInt(c.Offset, 10))
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := a.js.PublishMsg(ctx, msg, jetstream.WithMsgID(protocol.OutputMsgID(a.id, c.Contract, c.Stream, c.Offset, c.Data)),
		jetstream.WithExpectStream(protocol.OutputStreamOf(a.id)))
	return err
}
