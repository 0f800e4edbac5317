package process_test

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/untar/untartest"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
	"github.com/bourse/bourse/server/process/usertest"
)

// handed is what the exchange hands the server for a contract's files,
// as the agent's Fetch writes it; entered says a fetch began, and gate,
// if set, holds it until closed.
type handed struct {
	data    []byte
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func (h *handed) Fetch(ctx context.Context, _ string, w io.Writer) error {
	h.once.Do(func() { close(h.entered) })
	if h.gate != nil {
		select {
		case <-h.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	_, err := w.Write(h.data)
	return err
}

func handing(data []byte) *handed { return &handed{data: data, entered: make(chan struct{})} }

// filesOf are the terms' words for an archive: its digest and size.
func filesOf(archive []byte) *contract.Files {
	sum := sha256.Sum256(archive)
	return &contract.Files{Digest: "sha256:" + hex.EncodeToString(sum[:]), Bytes: int64(len(archive))}
}

// tracks counts the meter's gauges: a job's metering starts with one.
type tracks struct {
	server.FullUse
	mu sync.Mutex
	n  int
}

func (t *tracks) Track(gpus []contract.GPU, owns func(int) bool) (server.Gauge, error) {
	t.mu.Lock()
	t.n++
	t.mu.Unlock()
	return t.FullUse.Track(gpus, owns)
}

func (t *tracks) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// filesRunner is a runner of the test binary as one job user, that takes
// files of at most filesBytes (the default if 0), metered by tracks.
func filesRunner(t *testing.T, filesBytes int64) (r *process.Runner, out string, meter *tracks, bin string, users []string) {
	t.Helper()
	usertest.Need(t)
	users = usertest.Create(t, 1)
	bin = usertest.Executable(t)
	meter = &tracks{}
	r, out = newRunner(t, func(c *process.Config) {
		c.Users, c.Allowed, c.OutputDir, c.Meter, c.FilesBytes = users, []string{bin}, filepath.Join(usertest.Dir(t), "jobs"), meter, filesBytes
	})
	return r, out, meter, bin, users
}

// TestJobFiles: a job's files are fetched before it starts, with nothing
// metered meanwhile, and unpacked into its working folder, owned by its
// job user, without setuid bits; the runner says it takes them.
func TestJobFiles(t *testing.T) {
	r, out, meter, bin, users := filesRunner(t, 0)
	assert.Equal(t, int64(process.DefaultFilesBytes), r.Runs().Files.MaxBytes, "the hello says it takes files, and how large")

	archive := untartest.Tar(t, untartest.Dir("data/"), untartest.File("data/x.csv", "1,2\n"),
		untartest.Entry{Header: tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o4755}, Body: "#!/bin/sh\n"})
	h := handing(archive)
	h.gate = make(chan struct{})
	job := &contract.JobSpec{Command: bin, Args: []string{"data/x.csv", "run.sh"}, Env: map[string]string{helperEnv: "cat"}, Files: filesOf(archive)}
	started := make(chan server.Job, 1)
	go func() {
		j, err := r.Start(context.Background(), server.Assignment{Contract: "files-1", GPUs: gpus(0), Job: job, Files: h})
		assert.NoError(t, err)
		started <- j
	}()
	<-h.entered
	assert.Zero(t, meter.count(), "metered while its files were fetched")
	close(h.gate)
	j := <-started
	require.NotNil(t, j)
	m := waitDone(t, j, 10*time.Second)
	require.Equal(t, 0, exitCode(t, m), "stderr: %s", readFile(t, filepath.Join(out, "files-1", "stderr")))
	assert.Equal(t, 1, meter.count())

	u, err := user.Lookup(users[0])
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("data/x.csv uid=%s mode=-rw-r--r-- \"1,2\\n\"\nrun.sh uid=%s mode=-rwxr-xr-x \"#!/bin/sh\\n\"\n", u.Uid, u.Uid),
		readFile(t, filepath.Join(out, "files-1", "stdout")), "its user's, no setuid")
	assert.NoDirExists(t, filepath.Join(out, "files-1", process.WorkDir), "its working folder, files and all, goes when it ends")
}

// TestJobFilesRefused: a job whose files are over the server's limit,
// more or other than its terms say, or unpack out of its folder (a path
// out, a symlink out, a device node), does not start: nothing is
// metered, its stderr says why, its exit says "not started", nothing
// outside its folder is written, and its job user is free for the next.
func TestJobFilesRefused(t *testing.T) {
	r, out, meter, bin, _ := filesRunner(t, 64<<10)
	outside := filepath.Join(usertest.Dir(t), "outside")
	require.NoError(t, os.Mkdir(outside, 0o755))
	good := untartest.Tar(t, untartest.File("ok", "x"))
	for _, tc := range []struct {
		name   string
		handed []byte
		terms  *contract.Files
		code   bourse.Code
		says   string
	}{
		{"OverTheLimit", good, &contract.Files{Digest: filesOf(good).Digest, Bytes: 64<<10 + 1}, bourse.EJobUnsupported, "this server takes at most 65536"},
		{"MoreThanTheTerms", append(slices.Clone(good), 0), filesOf(good), bourse.EInvalidOffer, "more than the"},
		{"LessThanTheTerms", good[:len(good)-512], filesOf(good), bourse.EInvalidOffer, "the terms say"},
		{"DigestMismatch", untartest.Tar(t, untartest.File("ok", "y")), filesOf(good), bourse.EInvalidOffer, "do not match the digest"},
		{"PathOut", nil, nil, bourse.EInvalidOffer, "climbs out"},
		{"SymlinkOut", untartest.Tar(t, untartest.Symlink("out", outside), untartest.File("out/pwned", "x")), nil, bourse.EInvalidOffer, "cannot be unpacked"},
		{"DeviceNode", untartest.Tar(t, untartest.Device("mem")), nil, bourse.EInvalidOffer, "a device node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "PathOut" {
				tc.handed = untartest.Tar(t, untartest.File("../../outside/pwned", "x"))
			}
			if tc.terms == nil {
				tc.terms = filesOf(tc.handed)
			}
			id := "refused-" + strings.ToLower(tc.name)
			job := &contract.JobSpec{Command: bin, Args: []string{"ok"}, Env: map[string]string{helperEnv: "cat"}, Files: tc.terms}
			_, err := r.Start(context.Background(), server.Assignment{Contract: id, GPUs: gpus(0), Job: job, Files: handing(tc.handed)})
			require.Error(t, err)
			assert.Equal(t, tc.code, bourse.ErrorCode(err), "%v", err)
			assert.Contains(t, bourse.ErrorMessage(err), tc.says)
			assert.Contains(t, readFile(t, filepath.Join(out, id, "stderr")), "the job did not start: "+bourse.ErrorMessage(err))
			assert.Equal(t, "not started\n", readFile(t, filepath.Join(out, id, "exit")))
			assert.Empty(t, untartest.Names(t, outside), "written outside the job's folder")
			assert.Zero(t, meter.count(), "metered")
		})
	}
	t.Run("NoFetcher", func(t *testing.T) {
		job := &contract.JobSpec{Command: bin, Env: map[string]string{helperEnv: "cat"}, Files: filesOf(good)}
		_, err := r.Start(context.Background(), server.Assignment{Contract: "no-fetcher", GPUs: gpus(0), Job: job})
		assert.Equal(t, bourse.EUnavailable, bourse.ErrorCode(err), "%v", err)
	})
	left, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, e := range left {
		assert.False(t, strings.HasPrefix(e.Name(), ".files-"), "a fetched archive is left: %s", e.Name())
	}
	job := &contract.JobSpec{Command: bin, Args: []string{"ok"}, Env: map[string]string{helperEnv: "cat"}, Files: filesOf(good)}
	j, err := r.Start(context.Background(), server.Assignment{Contract: "after", GPUs: gpus(0), Job: job, Files: handing(good)})
	require.NoError(t, err, "the one job user is free again")
	assert.Equal(t, 0, exitCode(t, waitDone(t, j, 10*time.Second)))
}
