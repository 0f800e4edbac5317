package container

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/container/containertest"
	"github.com/bourse/bourse/server/process/usertest"
	"github.com/bourse/bourse/server/spool"
)

// The images the tests pull: busybox's static binary alone, its root
// owned by root as an unpacked image's is.
const (
	boxRef  = "test.example/box:1"
	rootRef = "test.example/box:root" // the same, whose USER is root
)

// images is the tests' image store: boxRef and rootRef, and nothing
// else; it counts pulls and releases, which must match.
type images struct {
	root              string
	pulled, released  atomic.Int64
	fail              error // what Pull answers, if set
	entrypoint, cmdOf []string
}

func (im *images) Pull(_ context.Context, ref string) (*Image, error) {
	if im.fail != nil {
		return nil, im.fail
	}
	cfg := ImageConfig{Entrypoint: im.entrypoint, Cmd: im.cmdOf, Env: []string{"PATH=/bin", "FROM_IMAGE=yes", "SEED=image"}}
	switch ref {
	case boxRef:
		cfg.User = "1000"
	case rootRef:
		cfg.User = "root"
	default:
		return nil, &bourse.Error{Code: bourse.ENotFound, Message: "no image " + ref + " in the test's store"}
	}
	im.pulled.Add(1)
	return &Image{Ref: ref, Digest: "sha256:" + strings.Repeat("0", 64), RootFS: im.root, Config: cfg}, nil
}

func (im *images) Release(*Image) { im.released.Add(1) }

// counting is a meter that counts the jobs it was asked to track.
type counting struct {
	server.FullUse
	tracked atomic.Int64
}

func (c *counting) Track(gpus []contract.GPU, owns func(int) bool) (server.Gauge, error) {
	c.tracked.Add(1)
	return c.FullUse.Track(gpus, owns)
}

// rig is a runner of the tests, with what they look at.
type rig struct {
	*Runner
	images *images
	meter  *counting
	out    string // the output folder
	users  []string
}

// newRig makes a runner on the test image with two job users, the
// changes edit makes to its configuration applied.
func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	rg := &rig{images: &images{root: containertest.Root(t)}, meter: &counting{}, users: usertest.Create(t, 2)}
	rg.out = filepath.Join(usertest.Dir(t), "jobs")
	cfg := Config{Images: rg.images, Sources: protocol.Images{Allowed: []string{"test.example"}}, Users: rg.users,
		OutputDir: rg.out, StateDir: filepath.Join(usertest.Dir(t), "state"), Meter: rg.meter, Grace: 500 * time.Millisecond,
		MemoryPerGPU: 256 << 20, Pids: 64, TmpBytes: 16 << 20, CDIDirs: []string{}, DevDir: t.TempDir(),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if edit != nil {
		edit(&cfg)
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rg.Runner = r
	t.Cleanup(func() {
		r.Close()
		if p, rel := rg.images.pulled.Load(), rg.images.released.Load(); p != rel {
			t.Errorf("%d images pulled, %d released", p, rel)
		}
	})
	return rg
}

var contractSeq atomic.Int64

// start starts a job of the image on GPU 0 that runs sh -c script.
func (rg *rig) start(t *testing.T, ref, script string) (string, server.Job) {
	t.Helper()
	return rg.startJob(t, &contract.JobSpec{Image: ref, Command: "/bin/sh", Args: []string{"-c", script}})
}

func (rg *rig) startJob(t *testing.T, job *contract.JobSpec) (string, server.Job) {
	t.Helper()
	id := fmt.Sprintf("c-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), contractSeq.Add(1))
	if len(id) > 64 {
		id = id[len(id)-64:]
	}
	j, err := rg.Start(context.Background(), server.Assignment{Contract: id, Job: job, GPUs: []contract.GPU{{Index: 0, Model: "H100"}}})
	if err != nil {
		t.Fatalf("start %s: %v", id, err)
	}
	return id, j
}

// finish waits for the job to end by itself, at most a minute (a stuck
// job is a failure, not a wait), and returns its exit and stdout.
func (rg *rig) finish(t *testing.T, id string, j server.Job) (int, string) {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(time.Minute):
		_ = j.Stop(context.Background(), contract.ReasonKilled)
		t.Fatalf("job %s did not end: stdout %q, stderr %q", id, rg.file(t, id, spool.StdoutFile), rg.file(t, id, spool.StderrFile))
	}
	rg.waitExit(t, id)
	m, err := j.Measure()
	if err != nil || m.ExitCode == nil {
		t.Fatalf("job %s: no exit status (%v)", id, err)
	}
	return *m.ExitCode, rg.file(t, id, spool.StdoutFile)
}

// waitExit waits for the exit file, written once everything of the job
// is gone.
func (rg *rig) waitExit(t *testing.T, id string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(rg.out, id, spool.ExitFile)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: no exit file", id)
		}
	}
}

// file is a file of the contract's output folder, "" where there is none.
func (rg *rig) file(t *testing.T, id, name string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(rg.out, id, name))
	return string(data)
}

// run runs sh -c script in a container of the image and returns its exit
// status and stdout.
func (rg *rig) run(t *testing.T, ref, script string) (int, string) {
	t.Helper()
	id, j := rg.start(t, ref, script)
	return rg.finish(t, id, j)
}

// initPID is the host's pid of the container's first process, as the
// runtime says.
func (rg *rig) initPID(t *testing.T, id string) int {
	t.Helper()
	out, err := exec.Command(rg.runtime, "--root", rg.state.runtimeRoot(), "state", containerID(id)).Output()
	if err != nil {
		t.Fatalf("runc state %s: %v", id, err)
	}
	var st struct{ Pid int }
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st.Pid
}

// cgroupOf is the folder of pid's cgroup in the cgroup v2 hierarchy: at
// /sys/fs/cgroup, or at /sys/fs/cgroup/unified beside cgroup v1's.
func cgroupOf(t *testing.T, pid int) string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	mount := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err != nil {
		mount = "/sys/fs/cgroup/unified"
	}
	for line := range strings.Lines(string(data)) {
		if rel, ok := strings.CutPrefix(strings.TrimSpace(line), "0::"); ok {
			return filepath.Join(mount, rel)
		}
	}
	t.Fatalf("no cgroup v2 of %d", pid)
	return ""
}

// leftovers says what of a runner's jobs is left on the machine: bundles,
// the runtime's containers, cgroups.
func (rg *rig) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	mount := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(mount, "cgroup.controllers")); err != nil {
		mount = "/sys/fs/cgroup/unified"
	}
	cgroups := filepath.Join(mount, rg.Host.Cgroup())
	for _, dir := range []string{filepath.Join(rg.state.dir, "bundles"), rg.state.runtimeRoot(), cgroups} {
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() { // a cgroup's files are not what is left
				left = append(left, filepath.Join(dir, e.Name()))
			}
		}
	}
	return left
}
