package natsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// OutputLimits bound the output stream, where servers put their jobs'
// stdout, stderr and results for the exchange to hand to each job's
// client. A contract's share is bounded by its server (output_cap per
// stream, results_cap); these bound the stream as a whole, on the NATS
// servers' disks.
type OutputLimits struct {
	// MaxAge is how long output is kept: past it, clients can no longer
	// read it. 7 days by default.
	MaxAge time.Duration
	// MaxBytes bounds the stream; past it the oldest output goes first.
	// 4 GiB by default on file storage, 256 MiB in memory (the demo).
	MaxBytes int64
}

func (l *OutputLimits) defaults(storage jetstream.StorageType) {
	if l.MaxAge <= 0 {
		l.MaxAge = 7 * 24 * time.Hour
	}
	switch {
	case l.MaxBytes > 0:
	case storage == jetstream.MemoryStorage:
		l.MaxBytes = 256 << 20
	default:
		l.MaxBytes = 4 << 30
	}
}

// outputStream is the output stream's configuration. It is a record, kept
// by age and size (limits retention, oldest out first), read by sequence
// and subject (direct gets, which any replica answers), de-duplicated by
// the chunks' ids. Only the exchange's NATS user may read it: clients and
// servers have no permission on the JetStream API nor on the servers'
// subjects, so a job's output reaches no one but through the exchange,
// which answers only the contract's client.
func outputStream(c Config) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        protocol.OutputStream,
		Description: "Bourse jobs' output (stdout, stderr, results) for their clients, de-duplicated by Nats-Msg-Id",
		Subjects:    []string{protocol.OutputSubjects},
		Storage:     c.StreamStorage,
		Replicas:    c.StreamReplicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      c.Output.MaxAge,
		MaxBytes:    c.Output.MaxBytes,
		// A chunk, its headers and the subject.
		MaxMsgSize:  protocol.MaxOutputChunk + 1024,
		Duplicates:  10 * time.Minute,
		AllowDirect: true,
	}
}

// startOutput creates the output stream (idempotently) and keeps its
// handle for the clients' reads.
func (s *Service) startOutput(ctx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("natsvc: jetstream: %w", err)
	}
	return withRetry(ctx, s.serve.JetStreamWait, s.house.Config().Logger, "create stream "+protocol.OutputStream, func(ctx context.Context) (err error) {
		s.output, err = js.CreateOrUpdateStream(ctx, outputStream(s.serve))
		return err
	})
}

// maxOutputChunks bounds the chunks of one reply, whatever their size, so
// that a job that writes a byte at a time costs a bounded number of reads.
const maxOutputChunks = 256

// handleOutput answers a client's logs or results request with a page of
// its contract's output: only the contract's client may read it (another
// client's contract is not_found), and only chunks its own server sent.
func (s *Service) handleOutput(part string) micro.HandlerFunc {
	return func(r micro.Request) {
		client, err := sender(r, protocol.RoleClient)
		var req protocol.OutputRequest
		if err == nil {
			err = decode(r, &req)
		}
		if err == nil {
			err = checkOutputRequest(&req)
		}
		ctx := context.Background()
		var c trade.Contract
		if err == nil {
			c, err = s.house.Contract(ctx, client, req.Contract)
		}
		var reply protocol.OutputReply
		if err == nil {
			reply, err = s.readOutput(ctx, c, part, req)
		}
		if err != nil {
			_ = natswire.RespondError(r, err)
			return
		}
		respond(r, reply)
	}
}

func checkOutputRequest(req *protocol.OutputRequest) error {
	if err := protocol.CheckID(req.Contract); err != nil {
		return &bourse.Error{Code: bourse.EInvalid, Field: "contract", Message: err.Error()}
	}
	switch {
	case req.MaxBytes < 0 || req.MaxBytes > protocol.MaxOutputBytes:
		return &bourse.Error{Code: bourse.EInvalid, Field: "max_bytes", Message: fmt.Sprintf("%d: want 0 to %d", req.MaxBytes, protocol.MaxOutputBytes)}
	case req.MaxBytes == 0:
		req.MaxBytes = protocol.DefaultOutputBytes
	}
	return nil
}

// readOutput reads the chunks of part of c's output stored after
// req.After, in order, until the page is full, the part's end, or the
// stream has no more.
func (s *Service) readOutput(ctx context.Context, c trade.Contract, part string, req protocol.OutputRequest) (protocol.OutputReply, error) {
	subject := protocol.OutputSubject(c.Server, c.ID, part)
	reply := protocol.OutputReply{Chunks: []protocol.OutputChunk{}, Next: req.After, State: c.State}
	size := 0
	for size < req.MaxBytes && len(reply.Chunks) < maxOutputChunks {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := s.output.GetMsg(rctx, reply.Next+1, jetstream.WithGetMsgSubject(subject))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return protocol.OutputReply{}, &bourse.Error{Code: bourse.EUnavailable, Message: "the output stream did not answer; retry", Err: err}
		}
		reply.Next = m.Sequence
		stream := m.Header.Get(protocol.StreamHeader)
		if stream == protocol.StreamEnd {
			var end protocol.OutputEnd
			if err := json.Unmarshal(m.Data, &end); err == nil {
				reply.End, reply.Done = &end, true
				break
			}
			continue
		}
		offset, err := strconv.ParseInt(m.Header.Get(protocol.OffsetHeader), 10, 64)
		if err != nil || offset < 0 || !partHolds(part, stream) {
			s.warn("server."+c.Server, "malformed output chunk skipped", "contract", c.ID, "seq", m.Sequence, "stream", stream)
			continue
		}
		reply.Chunks = append(reply.Chunks, protocol.OutputChunk{Seq: m.Sequence, Stream: stream, Offset: offset, Data: m.Data})
		size += len(m.Data)
	}
	// A job that never ran, or ran on the synthetic runner, wrote nothing:
	// no end will come.
	if !reply.Done && (c.State == trade.StateVoided || c.Meter == trade.MeterSynthetic) {
		reply.Done = true
	}
	return reply, nil
}

func partHolds(part, stream string) bool {
	if part == protocol.PartResults {
		return stream == protocol.StreamResults
	}
	return stream == protocol.StreamStdout || stream == protocol.StreamStderr
}
