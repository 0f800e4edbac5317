package natsvc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// FilesLimits bound clients' files (contract.Files): the archives their
// jobs work on, which each client puts into an object store bucket of
// its own for the exchange to hand its contracts' servers.
type FilesLimits struct {
	// Quota is each client's bucket's size, 1 GiB by default (256 MiB
	// in memory, the demo's): a client's puts past it are refused, and
	// no other client's. JetStream reserves it, for every client that
	// has asked for its bucket, against the NATS servers'
	// max_file_store (max_memory_store) and the account's JetStream
	// limits, as it does the output streams' quotas: those must hold
	// clients × Quota, or the buckets of the clients past it are not
	// made (the client is told to retry; docs/operations.md).
	Quota int64
	// MaxBytes is the largest archive an offer may name, the Quota by
	// default; a negative MaxBytes keeps no files (offers with files
	// are refused).
	MaxBytes int64
	// MaxAge is how long files are kept after they were put, 24 hours by
	// default, whether or not a contract names them; they go sooner once
	// no contract not yet ended, and no waiting offer, names them.
	MaxAge time.Duration
}

func (l *FilesLimits) defaults(storage jetstream.StorageType) {
	switch {
	case l.Quota > 0:
	case storage == jetstream.MemoryStorage:
		l.Quota = 256 << 20
	default:
		l.Quota = 1 << 30
	}
	if l.MaxBytes == 0 || l.MaxBytes > l.Quota {
		l.MaxBytes = l.Quota
	}
	if l.MaxAge <= 0 {
		l.MaxAge = 24 * time.Hour
	}
}

// filesStream is the configuration of client's files bucket: the stream
// nats.go's object store makes (its two subjects, new messages refused
// past its size, rollups, direct gets), bounded by the client's quota and
// the files' age, and in the size of one message, so that a chunk fits a
// fetch reply. Only the client may put into it and only the exchange read
// it (natsauth.PermissionsOf): neither may change it.
func filesStream(c Config, client string) jetstream.StreamConfig {
	b := protocol.FilesBucketOf(client)
	return jetstream.StreamConfig{
		Name:        protocol.FilesStreamOf(client),
		Description: "Bourse client " + client + "'s files, for its contracts' servers",
		Subjects:    []string{"$O." + b + ".C.>", "$O." + b + ".M.>"},
		Storage:     c.StreamStorage,
		Replicas:    c.StreamReplicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardNew,
		MaxAge:      c.Files.MaxAge,
		MaxBytes:    c.Files.Quota,
		MaxMsgSize:  protocol.MaxFilesChunk,
		AllowRollup: true,
		AllowDirect: true,
	}
}

// files is the Service as the House's Files: the clients' buckets.
type files Service

var _ exchange.Files = (*files)(nil)

// bucket opens client's bucket, making it (or bringing it to the
// exchange's limits) once per instance where create is set; without it,
// a client that never asked for one has none (ENotFound).
func (s *Service) bucket(ctx context.Context, client string, create bool) (jetstream.ObjectStore, error) {
	if obs, ok := s.buckets.Load(client); ok {
		return obs.(jetstream.ObjectStore), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if create {
		if _, err := s.js.CreateOrUpdateStream(ctx, filesStream(s.serve, client)); err != nil {
			return nil, &bourse.Error{Code: bourse.EUnavailable, Field: "files", Message: "your files' bucket could not be made; retry", Err: err}
		}
	}
	obs, err := s.js.ObjectStore(ctx, protocol.FilesBucketOf(client))
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, &bourse.Error{Code: bourse.ENotFound, Field: "files", Message: "no files of " + client + " are stored"}
	case err != nil:
		return nil, &bourse.Error{Code: bourse.EUnavailable, Field: "files", Message: "the files' bucket did not answer; retry", Err: err}
	}
	s.buckets.Store(client, obs)
	return obs, nil
}

// stored is what client's bucket holds of files f: their object, whole
// (its meta is written after its chunks), or an error that says why not.
func (s *Service) stored(ctx context.Context, client string, f contract.Files) (*jetstream.ObjectInfo, error) {
	notStored := &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.job.files",
		Message: fmt.Sprintf("the files %s are not stored in your bucket: put them first (bourse bid offer --files DIR does)", f.Digest)}
	obs, err := s.bucket(ctx, client, false)
	if bourse.ErrorCode(err) == bourse.ENotFound {
		return nil, notStored
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := obs.GetInfo(ctx, protocol.FilesObject(f))
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
		return nil, notStored
	case err != nil:
		return nil, &bourse.Error{Code: bourse.EUnavailable, Field: "terms.job.files", Message: "the files' bucket did not answer; retry", Err: err}
	case int64(info.Size) != f.Bytes:
		return nil, &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.job.files",
			Message: fmt.Sprintf("the files %s stored are %d bytes; the terms say %d", f.Digest, info.Size, f.Bytes)}
	}
	return info, nil
}

// Stored is the House's question: are client's files f there to fetch,
// within the exchange's limit?
func (fs *files) Stored(ctx context.Context, client string, f contract.Files) error {
	s := (*Service)(fs)
	if f.Bytes > s.serve.Files.MaxBytes {
		return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.job.files",
			Message: fmt.Sprintf("the files are %d bytes; this exchange keeps at most %d", f.Bytes, s.serve.Files.MaxBytes)}
	}
	_, err := s.stored(ctx, client, f)
	return err
}

// handleFiles answers a client's files request: its bucket, made if it
// was not, and whether the files are there already.
func (s *Service) handleFiles(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.FilesRequest
	if err == nil {
		err = decode(r, &req)
	}
	if err == nil {
		err = req.Check()
	}
	if err == nil && s.serve.Files.MaxBytes <= 0 {
		err = &bourse.Error{Code: bourse.EJobUnsupported, Field: "files", Message: "this exchange keeps no files"}
	}
	if err == nil && req.Bytes > s.serve.Files.MaxBytes {
		err = &bourse.Error{Code: bourse.EInvalidOffer, Field: "bytes",
			Message: fmt.Sprintf("%d bytes of files; this exchange keeps at most %d", req.Bytes, s.serve.Files.MaxBytes)}
	}
	ctx := context.Background()
	if err == nil {
		_, err = s.bucket(ctx, client, true)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	f := contract.Files{Digest: req.Digest, Bytes: req.Bytes}
	_, notYet := s.stored(ctx, client, f)
	respond(r, protocol.FilesReply{Bucket: protocol.FilesBucketOf(client), Object: protocol.FilesObject(f), Stored: notYet == nil,
		MaxBytes: s.serve.Files.MaxBytes, Quota: s.serve.Files.Quota, MaxAge: contract.Duration(s.serve.Files.MaxAge)})
}

// handleFetch answers a server's fetch with a page of its contract's
// files: only a contract of its own that holds its escrow (the House's
// FilesOf), and only from that contract's client's bucket, the object its
// terms name.
func (s *Service) handleFetch(r micro.Request) {
	server, err := sender(r, protocol.RoleServer)
	var req protocol.FetchRequest
	if err == nil {
		err = decode(r, &req)
	}
	if err == nil {
		if cerr := protocol.CheckID(req.Contract); cerr != nil {
			err = &bourse.Error{Code: bourse.EInvalid, Field: "contract", Message: cerr.Error()}
		}
	}
	ctx := context.Background()
	var client string
	var f contract.Files
	if err == nil {
		client, f, err = s.house.FilesOf(ctx, server, req.Contract)
	}
	var reply protocol.FetchReply
	if err == nil {
		reply, err = s.fetch(ctx, client, f, req.After)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, reply)
}

// fetch reads the chunks of client's files f stored after sequence
// after, in order, as many as fit a reply.
func (s *Service) fetch(ctx context.Context, client string, f contract.Files, after uint64) (protocol.FetchReply, error) {
	info, err := s.stored(ctx, client, f)
	if err != nil {
		return protocol.FetchReply{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	stream, err := s.js.Stream(rctx, protocol.FilesStreamOf(client))
	cancel()
	if err != nil {
		return protocol.FetchReply{}, &bourse.Error{Code: bourse.EUnavailable, Message: "the files' bucket did not answer; retry", Err: err}
	}
	subject := "$O." + protocol.FilesBucketOf(client) + ".C." + info.NUID
	reply := protocol.FetchReply{Chunks: [][]byte{}, Next: after}
	// A page is full once another chunk, at most MaxFilesChunk, might not
	// fit it.
	for size := 0; size+protocol.MaxFilesChunk <= protocol.MaxFetchBytes; {
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		m, err := stream.GetMsg(rctx, reply.Next+1, jetstream.WithGetMsgSubject(subject))
		cancel()
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			reply.Done = true
			break
		}
		if err != nil {
			return protocol.FetchReply{}, &bourse.Error{Code: bourse.EUnavailable, Message: "the files' bucket did not answer; retry", Err: err}
		}
		reply.Next = m.Sequence
		reply.Chunks = append(reply.Chunks, m.Data)
		size += len(m.Data)
	}
	return reply, nil
}

// dropFiles removes client's files f once no contract not yet ended and
// no waiting offer names them: a contract that named them ended (ev).
// Their bucket's age limit removes what this misses.
func (s *Service) dropFiles(ev exchange.Event) {
	t := ev.Contract.Terms
	if (ev.Type != protocol.EventSettled && ev.Type != protocol.EventVoided) || t.Job == nil || t.Job.Files == nil {
		return
	}
	s.requests.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		client, f := ev.Contract.Client, *t.Job.Files
		if used, err := s.house.FilesInUse(ctx, client, f); used || err != nil {
			return
		}
		obs, err := s.bucket(ctx, client, false)
		if err == nil {
			err = obs.Delete(ctx, protocol.FilesObject(f))
		}
		if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) && bourse.ErrorCode(err) != bourse.ENotFound {
			s.cfg.Logger.Warn("files not removed; their age limit will", "client", client, "files", f.Digest, "err", err)
		}
	})
}
