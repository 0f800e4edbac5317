package natsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// OutputLimits bound the output streams, where servers put their jobs'
// stdout, stderr and results for the exchange to hand to each job's
// client. A contract's share is bounded by its server (output_cap per
// stream, results_cap, declared at the start); these bound each server's
// stream, on the NATS servers' disks.
type OutputLimits struct {
	// MaxAge is how long output is kept: past it, clients can no longer
	// read it. 7 days by default.
	MaxAge time.Duration
	// MaxBytes is each server's quota: the bytes of output its own stream
	// holds. Past it that server's oldest output goes first, and no other
	// server's: a server that floods its stream evicts only its own jobs'
	// output. 256 MiB by default on file storage (a job's worst case at
	// the agent's default caps, 2 × 64 MiB of log and 64 MiB of results,
	// fits), 64 MiB in memory (the demo). JetStream reserves it, for
	// every server that has said hello, against the NATS servers'
	// max_file_store (max_memory_store) and the account's JetStream
	// limits: those must hold servers × MaxBytes, or the streams of the
	// servers past it are refused (logged; their output waits on their
	// disks).
	MaxBytes int64
}

func (l *OutputLimits) defaults(storage jetstream.StorageType) {
	if l.MaxAge <= 0 {
		l.MaxAge = 7 * 24 * time.Hour
	}
	switch {
	case l.MaxBytes > 0:
	case storage == jetstream.MemoryStorage:
		l.MaxBytes = 64 << 20
	default:
		l.MaxBytes = 256 << 20
	}
}

// outputStream is the configuration of server's output stream. It is a
// record, kept by age and size (limits retention, oldest out first), read
// by sequence and subject (direct gets, which any replica answers),
// de-duplicated by the chunks' ids. Its subjects are the server's alone,
// which only that server may publish on: JetStream de-duplicates ids and
// bounds bytes per stream, so one stream per server is what keeps a
// server from spending another's chunk ids (the real chunks would be
// dropped as duplicates) and from evicting another's clients' output by
// filling a shared stream. Only the exchange's NATS user may read it:
// clients and servers have no permission on the JetStream API nor on the
// servers' subjects, so a job's output reaches no one but through the
// exchange, which answers only the contract's client.
func outputStream(c Config, server string) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        protocol.OutputStreamOf(server),
		Description: "Bourse server " + server + "'s jobs' output (stdout, stderr, results) for their clients, de-duplicated by Nats-Msg-Id",
		Subjects:    []string{protocol.OutputSubjectsOf(server)},
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

// retiredOutputSubject is what the shared output stream of earlier
// versions is left listening on: a subject no one publishes to.
const retiredOutputSubject = protocol.Prefix + ".retired.output"

// startOutput keeps a JetStream handle for the output streams and retires
// the shared stream of earlier versions, whose subjects would overlap the
// servers' own streams'.
func (s *Service) startOutput(ctx context.Context) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("natsvc: jetstream: %w", err)
	}
	s.js = js
	log := s.house.Config().Logger
	return withRetry(ctx, s.serve.JetStreamWait, log, "retire stream "+protocol.SharedOutputStream, func(ctx context.Context) error {
		st, err := js.Stream(ctx, protocol.SharedOutputStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		cfg := st.CachedInfo().Config
		if !slices.Contains(cfg.Subjects, protocol.OutputSubjects) {
			return nil
		}
		cfg.Subjects = []string{retiredOutputSubject}
		if _, err := js.UpdateStream(ctx, cfg); err != nil {
			return err
		}
		state := st.CachedInfo().State
		log.Warn("the shared output stream of an earlier version is retired: each server's output now has a stream of its own; "+
			"what it holds is kept for its age but no longer read for clients", "stream", protocol.SharedOutputStream,
			"messages", state.Msgs, "bytes", state.Bytes)
		return nil
	})
}

// ensureOutput makes server's output stream, or brings it to the
// exchange's limits, once per instance: at the server's hello and before
// each start, so that the stream is there before the job writes. A
// failure is logged and tried again at the next; meanwhile the server's
// sends fail and its spool keeps the output on its disk.
func (s *Service) ensureOutput(ctx context.Context, server string) {
	if _, ok := s.outputs.Load(server); ok {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := s.js.CreateOrUpdateStream(ctx, outputStream(s.serve, server)); err != nil {
		s.warn("server."+server, "the server's output stream was not made; its jobs' output waits on its disk", "server", server,
			"stream", protocol.OutputStreamOf(server), "err", err)
		return
	}
	s.outputs.Store(server, struct{}{})
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
		var c contract.Contract
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
// stream has no more. It reads only c's server's own stream, so only
// chunks that server published; a chunk past the cap the server declared
// (outputCap) or malformed is dropped, and counted.
func (s *Service) readOutput(ctx context.Context, c contract.Contract, part string, req protocol.OutputRequest) (protocol.OutputReply, error) {
	subject := protocol.OutputSubject(c.Server, c.ID, part)
	reply := protocol.OutputReply{Chunks: []protocol.OutputChunk{}, Next: req.After, State: c.State, Cap: s.outputCap(c, part)}
	ictx, cancel := context.WithTimeout(ctx, 5*time.Second)
	stream, err := s.js.Stream(ictx, protocol.OutputStreamOf(c.Server))
	cancel()
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		stream = nil // the server never said hello to this market: nothing stored
	case err != nil:
		return protocol.OutputReply{}, &bourse.Error{Code: bourse.EUnavailable, Message: "the output stream did not answer; retry", Err: err}
	default:
		reply.Dropped = dropped(stream.CachedInfo().State, req.After, c.AcceptedAt.Add(-time.Minute-s.cfg.ClockSkew))
	}
	size := 0
	for stream != nil && size < req.MaxBytes && len(reply.Chunks) < maxOutputChunks {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := stream.GetMsg(rctx, reply.Next+1, jetstream.WithGetMsgSubject(subject))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return protocol.OutputReply{}, &bourse.Error{Code: bourse.EUnavailable, Message: "the output stream did not answer; retry", Err: err}
		}
		reply.Next = m.Sequence
		if m.Subject != subject {
			continue // the stream's subjects are its server's: never
		}
		kind := m.Header.Get(protocol.StreamHeader)
		if kind == protocol.StreamEnd {
			var end protocol.OutputEnd
			if err := json.Unmarshal(m.Data, &end); err == nil {
				reply.End, reply.Done = &end, true
				break
			}
			continue
		}
		offset, err := strconv.ParseInt(m.Header.Get(protocol.OffsetHeader), 10, 64)
		if err != nil || offset < 0 || !partHolds(part, kind) {
			s.dropped.WithLabelValues("malformed").Inc()
			s.warn("server."+c.Server, "malformed output chunk skipped", "contract", c.ID, "seq", m.Sequence, "stream", kind)
			continue
		}
		if offset > reply.Cap-int64(len(m.Data)) {
			s.dropped.WithLabelValues("over_cap").Inc()
			s.warn("server."+c.Server, "output past the cap the server declared dropped", "contract", c.ID, "seq", m.Sequence,
				"stream", kind, "offset", offset, "bytes", len(m.Data), "cap", reply.Cap)
			continue
		}
		reply.Chunks = append(reply.Chunks, protocol.OutputChunk{Seq: m.Sequence, Stream: kind, Offset: offset, Data: m.Data})
		size += len(m.Data)
	}
	// A job that ran on the synthetic runner wrote nothing: no end will
	// come; nor from one that never ran, once the server has had time to
	// send why it did not start (a contract voided at its server's
	// refusal of the start is voided before that word arrives).
	voidedLong := c.State == contract.StateVoided && s.cfg.Now().Sub(c.SettledAt) > notStartedWord
	if !reply.Done && (voidedLong || c.Meter == contract.MeterSynthetic) {
		reply.Done = true
	}
	return reply, nil
}

// notStartedWord is how long after a contract is voided its server's
// word of why its job did not start (its stderr) may still come.
const notStartedWord = 5 * time.Second

// outputCap is what the exchange relays of each stream of part of c's
// output: the cap c's server declared at the start, or, where it
// declared none, the server agent's default; never more than a server's
// quota, which could not hold more.
func (s *Service) outputCap(c contract.Contract, part string) int64 {
	declared, def := c.Output.Log, int64(protocol.DefaultLogCap)
	if part == protocol.PartResults {
		declared, def = c.Output.Results, protocol.DefaultResultsCap
	}
	if declared <= 0 {
		declared = def
	}
	return min(declared, s.serve.Output.MaxBytes)
}

// dropped says whether a server's output stream, in state, has removed
// (past its quota or its age) messages stored after sequence after that
// may be a contract's accepted at since. The stream removes its oldest
// first, so every message it removed is no newer than the first it kept
// (or, keeping none, the last it stored): if that is older than since,
// none of them was the contract's.
func dropped(state jetstream.StreamState, after uint64, since time.Time) bool {
	if state.FirstSeq <= after+1 {
		return false
	}
	newest := state.FirstTime
	if state.Msgs == 0 {
		newest = state.LastTime
	}
	return !newest.Before(since)
}

func partHolds(part, stream string) bool {
	if part == protocol.PartResults {
		return stream == protocol.StreamResults
	}
	return stream == protocol.StreamStdout || stream == protocol.StreamStderr
}
