// Package container runs contracts' jobs in containers: the image a job
// names (contract.JobSpec.Image), pulled by the image store the
// operator configures, run by an OCI runtime without a daemon (runc;
// crun where configured), one container per job.
//
// A container is made for its job alone: a read-only root from the image
// (an overlay per job, so the cached image is never written), a writable
// working folder (WorkMount) and /tmp and /dev/shm of bounded size, the
// results folder at ResultsMount ($BOURSE_RESULTS); a job user of the
// pool as its process's user whatever the image's USER says; the job's
// cgroup with pids and memory limits; namespaces of its own, a network
// with a loopback alone unless the operator allows the host's; no
// capabilities and no new privileges; runc's masked /proc paths; a
// seccomp filter; and exactly its GPUs' device nodes and the driver's
// libraries, as the NVIDIA Container Toolkit's CDI specification names
// them.
//
// Everything else is the process runner's (package process's Host):
// the job's output spooled to its client, the meter counting every
// process of the job's user and cgroup, stops by SIGTERM then SIGKILL,
// suspends frozen (the cgroup's freezer) and resumed, and nothing of the
// job left once it ends: its GPUs free only when the container is gone.
package container

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// Network settings of Config.Network.
const (
	NetworkNone = "none" // a network namespace of its own with a loopback alone (the default)
	NetworkHost = "host" // the host's: the job reaches what the machine reaches
)

// Defaults of Config's limits.
const (
	DefaultPids     = 4096    // processes and threads of a job
	DefaultTmpBytes = 1 << 30 // each of /tmp and /dev/shm
)

// limits bound one container.
type limits struct {
	Pids        int64 // processes and threads at once
	MemoryBytes int64 // memory, its tmpfs files included; 0 for no bound
	TmpBytes    int64 // each of /tmp and /dev/shm
}

// Config configures a Runner. Images, Sources and Users are required.
type Config struct {
	// Runtime is the OCI runtime: a path, or a name looked up in PATH;
	// empty for runc, else crun where runc is missing.
	Runtime string
	// Images pulls the jobs' images.
	Images Images
	// Sources is what the hello says of the images the server pulls:
	// the image store's allowed sources and size bounds. Check refuses
	// an image from another source before the store is asked.
	Sources protocol.Images
	// Users are the job users (process.Config.Users): a container's
	// process runs as one, never as root. At least one.
	Users []string
	// Env are variables every container starts with, beneath its
	// image's; AllowEnv the job's own it may set (process.Config's).
	Env      map[string]string
	AllowEnv []string
	// Devices maps a GPU index to the identifier CUDA should see and the
	// CDI device it is (a UUID, "GPU-…", or a MIG slice's).
	Devices map[int]string
	// CDIDirs are where the CDI specifications are (DefaultCDIDirs when
	// nil); DevDir and LibDirs where the device nodes and the driver's
	// libraries are without one ("/dev", DefaultLibDirs).
	CDIDirs []string
	DevDir  string
	LibDirs []string
	// Pids (DefaultPids when 0) and TmpBytes (DefaultTmpBytes) bound each
	// job; MemoryPerGPU bounds a job's memory at that much for each of
	// its GPUs, 0 for no bound (New warns).
	Pids         int64
	MemoryPerGPU int64
	TmpBytes     int64
	// Network is NetworkNone (or empty) or NetworkHost.
	Network string
	// StateDir holds the runtime's state and the containers' bundles, a
	// folder per runner (made and removed by it); empty for
	// /run/bourse-containers, or the temporary folder's without /run.
	StateDir string
	// The rest are process.Config's.
	OutputDir  string
	OutputCap  int64
	Grace      time.Duration
	StoppedTTL time.Duration
	MaxFrozen  int
	Meter      server.Meter
	NoMeter    string
	Logger     *slog.Logger
	FilesBytes int64
	FilesCount int64
}

// Runner runs jobs in containers, on a process.Host. Make one with New;
// Close kills the frozen jobs it keeps and removes its state.
type Runner struct {
	*process.Host
	cfg     Config
	log     *slog.Logger
	runtime string     // the OCI runtime's path
	gpus    *gpuSource // what a container's GPUs need
	state   *state     // the runtime's state and the bundles
}

var (
	_ server.Runner    = (*Runner)(nil)
	_ server.Checker   = (*Runner)(nil)
	_ server.Metered   = (*Runner)(nil)
	_ server.Describer = (*Runner)(nil)
)

// New checks cfg, finds the runtime and the GPUs' CDI specifications,
// removes what runners no longer running left, and opens the job users
// and cgroups.
func New(cfg Config) (*Runner, error) {
	const op = "container.New"
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if os.Geteuid() != 0 {
		return nil, &bourse.Error{Code: bourse.EPermission, Op: op, Message: fmt.Sprintf(
			"containers need the agent to run as root (the runtime makes namespaces, mounts and cgroups); it runs as uid %d", os.Geteuid())}
	}
	if cfg.Images == nil {
		return nil, bad("images", "no image store")
	}
	if len(cfg.Sources.Allowed) == 0 {
		return nil, bad("images.allowed", "no source to pull images from (a registry, e.g. ghcr.io/acme)")
	}
	for _, s := range cfg.Sources.Allowed {
		if _, err := contract.ParseImageSource(s); err != nil {
			return nil, bad("images.allowed", "%s", bourse.ErrorMessage(err))
		}
	}
	if len(cfg.Users) == 0 {
		return nil, bad("job_users", "containers run as job users (a container's process is never root): name at least one")
	}
	switch cfg.Network {
	case "":
		cfg.Network = NetworkNone
	case NetworkNone, NetworkHost:
	default:
		return nil, bad("network", "%q: want none or host", cfg.Network)
	}
	for k := range cfg.Env {
		if err := process.CheckName(k); err != nil {
			return nil, bad("env", "%v", err)
		}
	}
	if cfg.Pids <= 0 {
		cfg.Pids = DefaultPids
	}
	if cfg.TmpBytes <= 0 {
		cfg.TmpBytes = DefaultTmpBytes
	}
	if cfg.CDIDirs == nil {
		cfg.CDIDirs = DefaultCDIDirs
	}
	if cfg.DevDir == "" {
		cfg.DevDir = "/dev"
	}
	if cfg.LibDirs == nil {
		cfg.LibDirs = DefaultLibDirs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	runtime, err := findRuntime(cfg.Runtime)
	if err != nil {
		return nil, bad("runtime", "%v", err)
	}
	gpus, err := openGPUs(cfg.CDIDirs, cfg.DevDir, cfg.LibDirs)
	if err != nil {
		return nil, bad("cdi", "%v", err)
	}
	st, err := openState(cfg.StateDir, runtime, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("%s: state: %w", op, err)
	}
	h, err := process.NewHost(process.HostConfig{Users: cfg.Users, Cgroup: process.CgroupRequired, OutputDir: cfg.OutputDir,
		OutputCap: cfg.OutputCap, Grace: cfg.Grace, StoppedTTL: cfg.StoppedTTL, MaxFrozen: cfg.MaxFrozen, Meter: cfg.Meter, Logger: cfg.Logger,
		FilesBytes: cfg.FilesBytes, FilesCount: cfg.FilesCount})
	if err != nil {
		st.close()
		return nil, err
	}
	r := &Runner{Host: h, cfg: cfg, log: cfg.Logger, runtime: runtime, gpus: gpus, state: st}
	sweepV1(filepath.Dir(h.Cgroup()))
	controllers := []string{"pids"}
	if cfg.MemoryPerGPU > 0 {
		controllers = append(controllers, "memory")
	}
	if err := needControllers("/sys/fs/cgroup", filepath.Join("/sys/fs/cgroup", h.Cgroup()), controllers); err != nil {
		r.Close()
		return nil, &bourse.Error{Code: bourse.EUnavailable, Op: op, Field: "cgroup", Message: err.Error()}
	}
	if cfg.MemoryPerGPU <= 0 {
		r.log.Warn("CONTAINERS' MEMORY IS NOT BOUNDED: a job may take the machine's memory (runner.memory_per_gpu bounds it)")
	}
	r.log.Info("containers", "runtime", runtime, "gpus", gpus.String(), "network", cfg.Network, "state", st.dir)
	return r, nil
}

// findRuntime resolves the configured runtime, or runc, else crun.
func findRuntime(name string) (string, error) {
	names := []string{name}
	if name == "" {
		names = []string{"runc", "crun"}
	}
	for _, n := range names {
		if path, err := exec.LookPath(n); err == nil {
			return filepath.Abs(path)
		}
	}
	return "", fmt.Errorf("no OCI runtime %s found (install runc: apt-get install runc)", strings.Join(names, " or "))
}

// Runs is what the runner runs, for its server's hello: images from its
// sources, and its meter.
func (r *Runner) Runs() protocol.Runs {
	im := r.cfg.Sources
	return protocol.Runs{Runner: protocol.RunnerContainer, Meter: r.Meter(), Images: &im, Files: r.Files()}
}

// Meter is how the runner's jobs are measured; empty without a meter.
func (r *Runner) Meter() contract.Meter {
	if r.cfg.Meter == nil {
		return ""
	}
	return r.cfg.Meter.Kind()
}

// Check says whether the runner would start job: a meter to measure it,
// an image from its sources (contract.Runs.Refuses), its variables allowed.
func (r *Runner) Check(job *contract.JobSpec) error {
	if r.cfg.Meter == nil {
		return r.unmetered("container.Check")
	}
	_, err := r.prepare(job)
	return err
}

func (r *Runner) unmetered(op string) error { return process.Unmetered(op, r.cfg.NoMeter, "container") }

// prepare checks the job against what the runner runs and returns its
// own variables.
func (r *Runner) prepare(job *contract.JobSpec) (map[string]string, error) {
	const op = "container.Check"
	runs := r.Runs()
	if err := (*contract.Runs)(&runs).Refuses(job); err != nil {
		return nil, err
	}
	return process.JobEnv(op, job.Env, r.cfg.AllowEnv)
}

// Start pulls the job's image and starts its container, or thaws the
// frozen container the assignment resumes when it was frozen on the same
// GPUs. An image that cannot be pulled starts nothing, so that no GPU
// time is measured, and the job's stderr says why.
func (r *Runner) Start(ctx context.Context, a server.Assignment) (server.Job, error) {
	const op = "container.Start"
	if r.cfg.Meter == nil {
		return nil, r.unmetered(op)
	}
	jobEnv, err := r.prepare(a.Job)
	if err != nil {
		return nil, err
	}
	freezable := jobEnv[process.CheckpointEnv] == "none"
	if j, ok, err := r.Resume(a, freezable); ok {
		return j, err
	}
	img, err := r.cfg.Images.Pull(ctx, a.Job.Image)
	if err != nil {
		err = pullError(a.Job.Image, err)
		r.NotStarted(a.Contract, err)
		return nil, err
	}
	gpus, err := r.gpus.edits(a.GPUs, r.cfg.Devices)
	if err != nil {
		r.cfg.Images.Release(img)
		err = fmt.Errorf("%s: the job's GPUs: %w", op, err)
		r.NotStarted(a.Contract, err)
		return nil, err
	}
	built := false
	j, err := r.Run(ctx, a, freezable, func(s process.Slot) (process.Launch, error) {
		built = true
		return r.launch(a, s, img, jobEnv, gpus)
	})
	if err != nil {
		if !built {
			r.cfg.Images.Release(img)
		}
		return nil, fmt.Errorf("%s: %s: %w", op, a.Job.Image, err)
	}
	r.log.Info("container started", "contract", a.Contract, "image", a.Job.Image, "digest", img.Digest)
	return imaged{j, img.Digest}, nil
}

// imaged is a container's job, which says the digest of its image
// (server.Imaged).
type imaged struct {
	server.Job
	digest string
}

func (j imaged) Image() string { return j.digest }

// Prepares says that a job with an image is prepared before it starts:
// its image is pulled, which may take minutes (server.Preparer).
func (r *Runner) Prepares(job *contract.JobSpec) bool { return job != nil && job.Image != "" }

// Prepare pulls the job's image into the store's cache, where Start
// finds it.
func (r *Runner) Prepare(ctx context.Context, job *contract.JobSpec) error {
	img, err := r.cfg.Images.Pull(ctx, job.Image)
	if err != nil {
		return pullError(job.Image, err)
	}
	r.cfg.Images.Release(img)
	return nil
}

// pullError is why an image could not be pulled, as the client reads it:
// the store's own words where it names the cause, else unavailable.
func pullError(ref string, err error) error {
	if bourse.ErrorCode(err) != bourse.EInternal {
		return &bourse.Error{Code: bourse.ErrorCode(err), Op: "container.Start", Field: "job.image",
			Message: fmt.Sprintf("the image %s was not pulled: %s", ref, bourse.ErrorMessage(err)), Err: err}
	}
	return &bourse.Error{Code: bourse.EUnavailable, Op: "container.Start", Field: "job.image",
		Message: fmt.Sprintf("the image %s could not be pulled: %v", ref, err), Err: err}
}

// launch makes the job's bundle and says how to run it: the runtime's
// run, in the foreground, whose exit is the container's.
func (r *Runner) launch(a server.Assignment, s process.Slot, img *Image, jobEnv map[string]string, gpus edits) (process.Launch, error) {
	c := &container{slot: s, image: img.Config, job: a.Job, jobEnv: jobEnv, baseEnv: r.cfg.Env, devices: devicesInside(a.GPUs, r.cfg.Devices),
		gpus: gpus, network: r.cfg.Network,
		limits: limits{Pids: r.cfg.Pids, MemoryBytes: r.cfg.MemoryPerGPU * int64(len(a.GPUs)), TmpBytes: r.cfg.TmpBytes}}
	release := func() { r.cfg.Images.Release(img) }
	spec, err := c.spec()
	if err != nil {
		return process.Launch{Cleanup: release}, err
	}
	id := containerID(a.Contract)
	b, err := r.state.bundle(id, img.RootFS, spec)
	if err != nil {
		return process.Launch{Cleanup: release}, err
	}
	// The runtime makes the container's mount points with the mode it
	// asks for less the umask it inherits; the agent's is 077 (its
	// files are its own), which would close them to the job's user.
	return process.Launch{
		Path: "/bin/sh", Name: filepath.Base(r.runtime),
		Args: []string{"-c", `umask 022 && exec "$0" "$@"`, r.runtime, "--root", r.state.runtimeRoot(), "run", "--bundle", b.dir, id},
		Env:  map[string]string{"PATH": defaultPath}, Dir: b.dir, Contained: true,
		Cleanup: func() {
			r.state.remove(id, b)
			release()
		},
	}, nil
}

// containerID is the runtime's name for a contract's container; a
// contract id may hold @, which runtimes refuse (and . no contract id
// holds).
func containerID(contractID string) string {
	return "bourse-" + strings.ReplaceAll(contractID, "@", ".")
}

// devicesInside is CUDA_VISIBLE_DEVICES in a container: the GPUs' UUIDs
// where they are known, else their order in it (a container sees its own
// GPUs alone, numbered from 0, whatever their index on the host).
func devicesInside(gpus []contract.GPU, ids map[int]string) string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		if id, ok := ids[g.Index]; ok {
			out[i] = id
		} else {
			out[i] = strconv.Itoa(i)
		}
	}
	return strings.Join(out, ",")
}

// Isolation says in words what keeps the runner's jobs apart.
func (r *Runner) Isolation() string {
	return fmt.Sprintf("a container each (%s; network %s), %s", filepath.Base(r.runtime), r.cfg.Network, r.Host.Isolation())
}

// Close kills the frozen jobs the runner keeps for a resume and removes
// its state. Running jobs are the agent's to stop.
func (r *Runner) Close() {
	r.Host.Close()
	r.state.close()
	removeV1(r.Host.Cgroup())
}
