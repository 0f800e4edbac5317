package exchange_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/exchange/housetest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// storedFiles is the files each client has put, by client and digest:
// the House's Files as natsvc's buckets answer it.
type storedFiles map[[2]string]contract.Files

func (s storedFiles) Stored(_ context.Context, client string, f contract.Files) error {
	if g, ok := s[[2]string{client, f.Digest}]; ok && g == f {
		return nil
	}
	return &bourse.Error{Code: bourse.EInvalidOffer, Field: "terms.job.files", Message: "not stored"}
}

// filesRunner says it runs /bin/true and takes files of up to 1 MiB; it
// never starts a job (the harness's router is told to mute its starts).
type filesRunner struct{}

func (filesRunner) Runs() protocol.Runs {
	return protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterFullUse, Programs: []string{"/bin/true"},
		Files: &protocol.Files{MaxBytes: 1 << 20}}
}

func (filesRunner) Start(context.Context, server.Assignment) (server.Job, error) {
	return nil, errors.New("not started")
}

func withFiles(digest string, bytes int64) contract.Terms {
	t := program("/bin/true")
	t.Job.Files = &contract.Files{Digest: digest, Bytes: bytes}
	return t
}

func digestOf(c byte) string { return "sha256:" + strings.Repeat(string(c), 64) }

// TestOfferFiles: an offer's files must be stored, by its own client,
// before anything is escrowed, and go only to servers that take them; a
// contract with files has longer to start, their size at FilesRate; a
// server is handed the files of its own contracts alone, while they
// hold their escrow; files stay in use while a contract or a waiting
// offer names them.
func TestOfferFiles(t *testing.T) {
	files := storedFiles{
		{"ada", digestOf('a')}: {Digest: digestOf('a'), Bytes: 3 << 20},
		{"bob", digestOf('b')}: {Digest: digestOf('b'), Bytes: 1 << 10},
	}
	h := housetest.New(t, exchange.Config{StartTimeout: 15 * time.Second, Files: files, FilesRate: 1 << 20})
	h.ServerRunning("atlas", "H100", 4, nil, filesRunner{})
	h.Router.MuteStarts("atlas")
	h.Wallet("ada", "100")
	h.Wallet("bob", "100")
	ctx := context.Background()

	code, msg := refused(t, h, "not-put", withFiles(digestOf('c'), 1<<10))
	assert.Equal(t, bourse.EInvalidOffer, code, "files never put: %s", msg)
	code, msg = refused(t, h, "another-clients", withFiles(digestOf('b'), 1<<10))
	assert.Equal(t, bourse.EInvalidOffer, code, "ada names bob's files: %s", msg)
	code, msg = refused(t, h, "other-size", withFiles(digestOf('a'), 1<<10))
	assert.Equal(t, bourse.EInvalidOffer, code, "ada's files, another size: %s", msg)
	code, msg = refused(t, h, "too-large", withFiles(digestOf('a'), 3<<20))
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "this server takes at most 1048576")
	assert.Equal(t, "100", h.Balance(h.Wallet("ada", "0")).Available.String(), "nothing escrowed for a refused offer")

	files[[2]string{"ada", digestOf('d')}] = contract.Files{Digest: digestOf('d'), Bytes: 1<<20 - 1}
	reply, err := h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "stored", Terms: withFiles(digestOf('d'), 1<<20-1)})
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	k := reply.Contract
	assert.Equal(t, 16*time.Second, k.StartDeadline.Sub(k.AcceptedAt), "15 s, and a second to fetch its 1 MiB at 1 MiB/s")

	client, f, err := h.House.FilesOf(ctx, "atlas", k.ID)
	require.NoError(t, err)
	assert.Equal(t, "ada", client)
	assert.Equal(t, digestOf('d'), f.Digest)
	_, _, err = h.House.FilesOf(ctx, "hermes", k.ID)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "another server asks for atlas's contract's files")
	_, _, err = h.House.FilesOf(ctx, "atlas", "ada@nothing")
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))

	inUse := func() bool {
		used, err := h.House.FilesInUse(ctx, "ada", f)
		require.NoError(t, err)
		return used
	}
	assert.True(t, inUse(), "the accepted contract names them")
	waits := withFiles(digestOf('d'), 1<<20-1)
	waits.Class.Model = "A100" // no server has one: it waits
	reply, err = h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "waits", Terms: waits, Wait: contract.Duration(time.Hour)})
	require.NoError(t, err)
	require.NotNil(t, reply.Queued, "%+v", reply)
	h.Run(17*time.Second, time.Second)
	voided, err := h.House.Contract(ctx, "ada", k.ID)
	require.NoError(t, err)
	require.Equal(t, contract.StateVoided, voided.State, "never started by its deadline %v (now %v)", voided.StartDeadline, h.Now())
	_, _, err = h.House.FilesOf(ctx, "atlas", k.ID)
	assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "a contract that ended has no files to fetch")
	assert.True(t, inUse(), "the waiting offer names them")
	_, err = h.House.Cancel(ctx, "ada", exchange.ContractID("ada", "waits"))
	require.NoError(t, err)
	assert.False(t, inUse(), "nothing names them any more")
	h.Audit()
}

// TestNoFilesKept: an exchange that keeps no files refuses offers with
// files, saying so.
func TestNoFilesKept(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: time.Minute})
	h.ServerRunning("atlas", "H100", 4, nil, filesRunner{})
	h.Wallet("ada", "100")
	code, msg := refused(t, h, "no-files", withFiles(digestOf('a'), 1))
	assert.Equal(t, bourse.EJobUnsupported, code)
	assert.Contains(t, msg, "this exchange keeps no files")
}

// startingRunner takes files as filesRunner does and runs every job as
// the synthetic runner does, on the harness's clock, until stopped.
type startingRunner struct {
	*server.Synthetic
}

func (startingRunner) Runs() protocol.Runs { return filesRunner{}.Runs() }

func (r startingRunner) Start(ctx context.Context, a server.Assignment) (server.Job, error) {
	return r.Synthetic.Start(ctx, a)
}

// TestSuspendedKeepsFiles: a suspended contract's files stay for its
// resume, which fetches them again; once the resume ends too, nothing
// needs them.
func TestSuspendedKeepsFiles(t *testing.T) {
	f := contract.Files{Digest: digestOf('e'), Bytes: 1 << 10}
	h := housetest.New(t, exchange.Config{Files: storedFiles{{"ada", f.Digest}: f}})
	h.ServerRunning("atlas", "H100", 2, nil, startingRunner{Synthetic: &server.Synthetic{Now: h.Clock.Now}})
	h.Wallet("ada", "100")
	ctx := context.Background()
	inUse := func() bool {
		used, err := h.House.FilesInUse(ctx, "ada", f)
		require.NoError(t, err)
		return used
	}
	tm := withFiles(f.Digest, f.Bytes)
	reply, err := h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "first", Terms: tm})
	require.NoError(t, err)
	require.NotNil(t, reply.Contract, "%+v", reply)
	id := reply.Contract.ID
	h.Run(2*time.Second, time.Second)
	_, err = h.House.Control(ctx, "ada", id, contract.ReasonSuspended)
	require.NoError(t, err)
	h.Run(2*time.Second, time.Second)
	k, err := h.House.Contract(ctx, "ada", id)
	require.NoError(t, err)
	require.Equal(t, contract.ReasonSuspended, k.Reason)
	assert.True(t, inUse(), "kept for the suspended contract's resume")

	again, err := h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "again", Terms: tm, Resumes: id})
	require.NoError(t, err)
	require.NotNil(t, again.Contract, "%+v", again)
	h.Run(2*time.Second, time.Second)
	_, err = h.House.Control(ctx, "ada", again.Contract.ID, contract.ReasonKilled)
	require.NoError(t, err)
	h.Run(2*time.Second, time.Second)
	assert.False(t, inUse(), "the resume ended: nothing needs them")
}
