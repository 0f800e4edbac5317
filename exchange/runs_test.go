package exchange_test

import (
	"context"
	"io"
	"log/slog"
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
	"github.com/bourse/bourse/server/process"
)

// program is job's terms with a program in place of its profile.
func program(command string) contract.Terms {
	t := job(1, "0.01")
	t.Job = &contract.JobSpec{Command: command, Args: []string{"-c", "print(1)"}}
	return t
}

// processRunner runs /bin/true alone, metered as if at full use.
func processRunner(t *testing.T) *process.Runner {
	t.Helper()
	r, err := process.New(process.Config{Allowed: []string{"/bin/true"}, OutputDir: t.TempDir(), Meter: server.FullUse{},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(r.Close)
	return r
}

// refused makes client's offer of tm and returns its error's code and
// message; the offer must fail.
func refused(t *testing.T, h *housetest.Harness, id string, tm contract.Terms) (bourse.Code, string) {
	t.Helper()
	reply, err := h.House.Offer(context.Background(), "ada", protocol.OfferRequest{RequestID: id, Terms: tm})
	require.Error(t, err, "offer %s: %+v", id, reply)
	return bourse.ErrorCode(err), bourse.ErrorMessage(err)
}

// TestRoutesByWhatServersRun: servers say in their hello what they run,
// and an offer goes only to those that run its job. A program goes to
// the server that runs it, never to a synthetic one (which would have
// taken it, run nothing and charged); a profile goes to a synthetic
// server, never to one that runs programs only; a server named for a job
// it does not run, and a program no server lists, are refused at once
// with a code and a message that say why; a server that does not say
// what it runs is offered no program; a waiting program waits for a
// server that runs it.
func TestRoutesByWhatServersRun(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: time.Minute})
	// atlas sorts first: it is asked first, and takes whatever it is asked.
	h.Server("atlas", "H100", 4, nil)
	h.Wallet("ada", "100")
	ctx := context.Background()

	code, msg := refused(t, h, "program-to-synthetic", program("/bin/true"))
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "atlas: this server runs synthetic jobs only")

	reply, err := h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "waits", Terms: program("/bin/true"), Wait: 60_000_000_000})
	require.NoError(t, err)
	require.NotNil(t, reply.Queued, "no server runs it yet: it waits, %+v", reply)
	h.Advance(time.Second)
	assert.Zero(t, h.House.Match(ctx), "the synthetic server frees up: the waiting program is not offered to it")

	h.ServerRunning("hermes", "H100", 4, nil, processRunner(t))
	h.Router.MuteStarts("hermes") // routing is the question here, not running /bin/true
	h.Advance(time.Second)
	require.Equal(t, 1, h.House.Match(ctx), "a server that runs it came: the waiting program is its")
	waited, err := h.House.Contracts(ctx, "ada", 10)
	require.NoError(t, err)
	require.Len(t, waited, 1)
	assert.Equal(t, "hermes", waited[0].Server)

	reply = offer(t, h, "ada", "program", program("/bin/true"), 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, "hermes", reply.Contract.Server, "the program goes to the server that runs programs")

	reply = offer(t, h, "ada", "profile", job(1, "0.01"), 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, "atlas", reply.Contract.Server)
	tm := job(1, "0.01")
	tm.Server = "hermes"
	code, msg = refused(t, h, "profile-to-process", tm)
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "hermes: this server runs programs: the offer must name a command")

	tm = program("/bin/true")
	tm.Server = "atlas"
	code, msg = refused(t, h, "named-synthetic", tm)
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "atlas: this server runs synthetic jobs only")

	code, msg = refused(t, h, "by-name", program("true"))
	assert.Equal(t, bourse.EJobUnsupported, code, "no server runs it, each for its reason: %s", msg)
	assert.Contains(t, msg, `hermes: "true" is not a program this server runs: it runs /bin/true (name one exactly as listed)`)

	tm = program("true")
	tm.Server = "hermes"
	code, msg = refused(t, h, "by-name-named", tm)
	assert.Equal(t, bourse.EPermission, code, "the server does not list it: %s", msg)

	// A server older than Runs says nothing of what it runs.
	hello := h.Router.Nodes["atlas"].Hello(h.Now())
	hello.Runs = nil
	_, err = h.House.Hello(ctx, "old", hello)
	require.NoError(t, err)
	tm = program("/bin/true")
	tm.Server = "old"
	code, msg = refused(t, h, "named-old", tm)
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "does not say what it runs")
	h.Audit()
}

// TestBookAsksOnlyWhereTheJobRuns: the book offers a waiting offer only
// to servers that run its job, by the rule an offer is routed by: a
// waiting synthetic job is never offered to a server that runs programs
// only, however many GPUs it frees (the probe of 2026-12-01 saw one
// matched there and run). It waits for a server that runs it.
func TestBookAsksOnlyWhereTheJobRuns(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: time.Minute})
	h.ServerRunning("hermes", "H100", 4, nil, processRunner(t))
	h.Wallet("ada", "100")
	ctx := context.Background()
	reply, err := h.House.Offer(ctx, "ada", protocol.OfferRequest{RequestID: "waits", Terms: job(1, "0.01"), Wait: contract.Duration(time.Hour)})
	require.NoError(t, err)
	require.NotNil(t, reply.Queued, "no server runs it: it waits, %+v", reply)
	for range 3 {
		h.Advance(time.Minute) // past RematchEvery: every server with room is matched again
		h.Tick()
		assert.Zero(t, h.House.Match(ctx))
	}
	assert.Zero(t, h.Router.AskedOf("hermes"), "asked to run a synthetic job it does not run")

	h.Server("atlas", "H100", 1, nil)
	h.Advance(time.Second)
	h.Tick()
	require.Equal(t, 1, h.House.Match(ctx), "a server that runs it came: the waiting offer is its")
	made, err := h.House.Contracts(ctx, "ada", 10)
	require.NoError(t, err)
	require.Len(t, made, 1)
	assert.Equal(t, "atlas", made[0].Server)
	h.Audit()
}

// image is job's terms with an image in place of its profile.
func image(ref string) contract.Terms {
	t := job(1, "0.01")
	t.Job = &contract.JobSpec{Image: ref}
	return t
}

// containerRunner says it runs images from ghcr.io/acme, as a container
// runner would; its jobs are synthetic, since routing is the question.
type containerRunner struct{ server.Synthetic }

func (c *containerRunner) Runs() protocol.Runs {
	return protocol.Runs{Runner: protocol.RunnerContainer, Meter: contract.MeterNVML,
		Images: &protocol.Images{Allowed: []string{"ghcr.io/acme"}, MaxBytes: 1 << 30}}
}

// TestRoutesImagesToContainerServers: an offer that names an image goes
// only to a server that runs containers and pulls from the image's
// registry and repository. Synthetic and process servers are never sent
// one (they would run something else, or nothing, and charge for it);
// where only they have the GPUs, the offer is refused job_unsupported on
// the field terms.job.image, each server's reason named; an image from a
// source the container server does not pull is refused the same way, and
// a program without an image is not sent to it.
func TestRoutesImagesToContainerServers(t *testing.T) {
	h := housetest.New(t, exchange.Config{ServerLostAfter: time.Minute})
	h.Server("atlas", "H100", 4, nil)
	h.ServerRunning("hermes", "H100", 4, nil, processRunner(t))
	h.Wallet("ada", "100")

	code, msg := refused(t, h, "image-to-others", image("ghcr.io/acme/train:v1"))
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "atlas: this server runs synthetic jobs only, not container images")
	assert.Contains(t, msg, "hermes: this server runs the programs it lists, not container images")
	_, err := h.House.Offer(context.Background(), "ada", protocol.OfferRequest{RequestID: "image-to-others-2", Terms: image("ghcr.io/acme/train:v1")})
	var e *bourse.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, "terms.job.image", e.Field)

	h.ServerRunning("iris", "H100", 4, nil, &containerRunner{server.Synthetic{Now: h.Clock.Now}})
	h.Router.MuteStarts("iris")
	reply := offer(t, h, "ada", "image", image("ghcr.io/acme/train:v1"), 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, "iris", reply.Contract.Server, "the image goes to the server that pulls it")

	tm := image("ghcr.io/acme/train:v1")
	tm.Job.Command, tm.Job.Args = "/bin/true", []string{"-x"}
	reply = offer(t, h, "ada", "image-and-command", tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, "iris", reply.Contract.Server, "a command runs inside the image")

	code, msg = refused(t, h, "elsewhere", image("docker.io/library/busybox"))
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "iris: docker.io/library/busybox:latest is not an image this server pulls: it pulls from ghcr.io/acme")

	tm = program("/bin/true")
	tm.Server = "iris"
	code, msg = refused(t, h, "program-to-container", tm)
	assert.Equal(t, bourse.EJobUnsupported, code, msg)
	assert.Contains(t, msg, "iris: this server runs container images only")

	reply = offer(t, h, "ada", "program", program("/bin/true"), 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, "hermes", reply.Contract.Server, "programs still go to the server that lists them")
	h.Audit()
}

// refusing is a runner that cannot start any job, for the reason err
// gives (an image its store would not pull, say).
type refusing struct{ err error }

func (r refusing) Start(context.Context, server.Assignment) (server.Job, error) { return nil, r.err }

// TestStartRefusedVoidsAtOnce: a server that answers the start that it
// cannot start the job has the contract voided at once, the prepayment
// back whole, not at the start deadline; one that does not answer leaves
// it to the sweep at that deadline.
func TestStartRefusedVoidsAtOnce(t *testing.T) {
	h := housetest.New(t, exchange.Config{StartTimeout: 15 * time.Second})
	h.ServerRunning("gpu1", "H100", 1, nil, refusing{&bourse.Error{Code: bourse.EInvalidOffer, Field: "job.image", Message: "the image was not pulled: manifest unknown"}})
	wallet := h.Wallet("ada", "100")
	reply := offer(t, h, "ada", "refused", job(1, "0.01"), 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	c := contractOf(t, h, "ada", reply.Contract.ID)
	assert.Equal(t, contract.StateVoided, c.State, "voided at the refusal")
	assert.Equal(t, contract.ReasonNotStarted, c.Reason)
	assert.True(t, h.Balance(wallet).Held.IsZero(), "the prepayment back")

	h.ServerRunning("gpu2", "H100", 1, nil, refusing{&bourse.Error{Code: bourse.EUnavailable, Message: "busy"}})
	tm := job(1, "0.01")
	tm.Server = "gpu2"
	reply = offer(t, h, "ada", "unanswered", tm, 0)
	require.NotNil(t, reply.Contract, "%+v", reply)
	assert.Equal(t, contract.StateAccepted, contractOf(t, h, "ada", reply.Contract.ID).State, "no word of the job: the sweep's, at the deadline")
	h.Run(16*time.Second, time.Second)
	assert.Equal(t, contract.StateVoided, contractOf(t, h, "ada", reply.Contract.ID).State)
	h.Audit()
}
