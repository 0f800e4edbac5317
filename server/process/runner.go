// Package process runs contracts' jobs as operating-system processes: the
// server.Runner for real GPU work.
//
// A job's command must be one of the programs the server's configuration
// allows, and it is executed directly, never through a shell: its arguments
// reach it as they are. Its environment is the server's declared one, the
// job's own variables where the configuration allows their names, and the
// assigned GPUs in CUDA_VISIBLE_DEVICES and NVIDIA_VISIBLE_DEVICES.
//
// A job is every process it starts, however it detaches. Each job runs in
// a session and process group of its own, and, where the configuration
// names job users (Config.Users), as a Unix user of its own that no other
// job runs as meanwhile, and, where one can be made, in a cgroup v2 of its
// own (Config.Cgroup). Its user and its cgroup are what a process cannot
// leave: the meter counts every process of them, a stop kills every one,
// and the job ends (its GPUs free) only once none is left. Its output goes
// to files under the output directory, capped in size, with a directory
// for the files it leaves ($BOURSE_RESULTS), laid out as package spool
// reads them to send them to the job's client; a job user may reach its
// own folders and no other job's, nor the agent's files.
//
// What keeps jobs apart and whole is the Host's, whatever a job runs:
// package container runs containers on a Host of its own, through an OCI
// runtime that puts each container in its job's cgroup as its job user.
package process

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// Defaults for the zero values of Config.
const (
	DefaultGrace      = 10 * time.Second
	DefaultOutputCap  = 64 << 20
	DefaultStoppedTTL = 10 * time.Minute
)

// CheckpointEnv is the job variable that says how the job suspends. By
// default a suspended job is sent SIGTERM and given the grace period to
// checkpoint and exit. A job that sets CheckpointEnv to "none" cannot
// checkpoint: it is frozen with SIGSTOP instead, and a contract that
// resumes it on the same GPUs thaws it with SIGCONT, unless it was ended
// meanwhile (Config.StoppedTTL, Config.MaxFrozen, frozen.go).
const CheckpointEnv = "BOURSE_CHECKPOINT"

// ResultsEnv names the directory where a job leaves the files its client
// fetches (bourse bid results).
const ResultsEnv = "BOURSE_RESULTS"

// WorkDir is the folder of a contract's output folder where its job runs,
// its own to write; it is removed when the job ends.
const WorkDir = "work"

// Config configures a Runner. Allowed is required; the rest have defaults.
type Config struct {
	// Allowed are the programs jobs may run: absolute paths, or names
	// looked up in this process's PATH when New is called. A job names one
	// as it is written here or by its resolved path.
	Allowed []string
	// AllowShell lets Allowed name a shell, or another program that runs
	// the program its arguments name (env, nice, timeout, sudo, …: see
	// programs.go); without it New refuses one.
	AllowShell bool
	// Users are the Unix users jobs run as, one job at a time each, as
	// Slurm's and HTCondor's slot users: give at least as many as the
	// server has GPUs (a job frozen by a suspend holds its user, but
	// gives it up to a job that needs it: MaxFrozen).
	// They must be users of their own, used for nothing else (processes
	// of theirs that New finds are killed: an earlier agent's jobs), not
	// root, the agent's user, or in its group. A user is given to a job
	// only once no process of it is left, and when its job ends every
	// process of it is killed. Running jobs as other users needs the agent
	// to run as root (or with CAP_SETUID, CAP_SETGID, CAP_KILL, CAP_CHOWN,
	// CAP_FOWNER and CAP_DAC_OVERRIDE): New fails otherwise. With Users,
	// New sets the agent's umask to 077, so that what jobs create is
	// theirs alone. Without Users, jobs run as the agent's own user, and
	// can read whatever it can: New warns of it.
	Users []string
	// Cgroup is CgroupAuto (or empty) for a cgroup v2 per job where one can
	// be made (the agent is root or has a cgroup delegated to it), CgroupOff
	// for none, or CgroupRequired to fail where none can be made.
	Cgroup string
	// Env is the environment every job starts with (PATH, HOME, …); the
	// server's own environment, which may hold credentials, is not passed.
	Env map[string]string
	// AllowEnv are the variables a job may set: exact names, or prefixes
	// ending in "*". CheckpointEnv is always allowed; the GPU variables
	// never are.
	AllowEnv []string
	// Devices maps a GPU index to the identifier CUDA should see (a UUID,
	// or a MIG-… UUID for a MIG slice); GPUs missing from it are named by
	// their index.
	Devices map[int]string
	// OutputDir holds a directory per contract with the job's stdout and
	// stderr, its results directory and its exit status (package spool's
	// layout); the job runs in its WorkDir. Empty for
	// os.TempDir()/bourse-jobs.
	OutputDir string
	// OutputCap bounds each of the two files in bytes; what a job writes
	// beyond it is dropped. Zero for DefaultOutputCap.
	OutputCap int64
	// Grace is how long a job has between SIGTERM and SIGKILL. Zero for
	// DefaultGrace.
	Grace time.Duration
	// StoppedTTL is how long a job frozen by a suspend waits for its
	// resume before it is killed: its contract settled at the suspend,
	// and pays for none of what it holds meanwhile. Zero for
	// DefaultStoppedTTL; New refuses a negative one.
	StoppedTTL time.Duration
	// MaxFrozen bounds the jobs frozen by a suspend and kept for their
	// resume at once: a suspend that freezes one more ends the oldest.
	// Zero for the default: one fewer than Users (at least 1), so that a
	// user is left for new work, or DefaultMaxFrozen without Users; -1
	// (any negative) freezes none: a suspend stops a job that cannot
	// checkpoint as it stops any other. New refuses more than Users.
	// Whatever the bound, a job that needs a user while none is free
	// ends a frozen job and gets its user (frozen.go).
	MaxFrozen int
	// Meter measures the jobs' GPU use. Without one the runner refuses
	// every job (bourse.EUnmetered): it could charge nothing for it.
	Meter server.Meter
	// NoMeter says why there is no Meter ("no NVIDIA driver"), for the
	// refusal.
	NoMeter string
	Logger  *slog.Logger // nil: slog.Default()
	// FilesBytes and FilesCount bound a job's files (HostConfig's); a
	// negative FilesBytes takes none.
	FilesBytes int64
	FilesCount int64
}

// Runner starts jobs as processes, on a Host. Make one with New; Close
// kills the frozen jobs it still keeps.
type Runner struct {
	*Host
	cfg     Config
	allowed map[string]string // a name a job may use → the path to execute
}

var (
	_ server.Runner    = (*Runner)(nil)
	_ server.Checker   = (*Runner)(nil)
	_ server.Metered   = (*Runner)(nil)
	_ server.Describer = (*Runner)(nil)
)

// Runs is what the runner runs, for its server's hello: programs, each
// allowed name as a job may write it, and its meter.
func (r *Runner) Runs() protocol.Runs {
	return protocol.Runs{Runner: protocol.RunnerProcess, Meter: r.Meter(), Programs: r.programs(), Files: r.Files()}
}

// programs are the names a job may give its command, sorted.
func (r *Runner) programs() []string {
	return slices.Sorted(maps.Keys(r.allowed))
}

// Meter is how the runner's jobs are measured; empty without a meter.
func (r *Runner) Meter() contract.Meter {
	if r.cfg.Meter == nil {
		return ""
	}
	return r.cfg.Meter.Kind()
}

// unmetered is the refusal of a runner without a meter.
func (r *Runner) unmetered(op string) error { return Unmetered(op, r.cfg.NoMeter, "process job") }

// Unmetered is the refusal of a runner without a meter (EUnmetered): why
// there is none, and what it therefore runs none of.
func Unmetered(op, why, what string) error {
	if why == "" {
		why = "no GPU meter"
	}
	return &bourse.Error{Code: bourse.EUnmetered, Op: op, Message: fmt.Sprintf(
		"this server cannot measure GPU use (%s), so it runs no %s; its operator may choose the fallback %s", why, what, server.FullUseHint)}
}

// New checks cfg, resolves the allowed programs and creates the output
// directory.
func New(cfg Config) (*Runner, error) {
	const op = "process.New"
	if len(cfg.Allowed) == 0 {
		return nil, bourse.Errorf(bourse.EInvalid, op, "no allowed programs")
	}
	allowed := map[string]string{}
	for _, a := range cfg.Allowed {
		path, err := exec.LookPath(a)
		if err != nil {
			return nil, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "allowed", Message: a + ": not an executable program", Err: err}
		}
		if path, err = filepath.Abs(path); err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if !cfg.AllowShell && runsPrograms(path) {
			return nil, bourse.Errorf(bourse.EInvalid, op, "%s is a shell or runs other programs (as env, nice, timeout, sudo do); jobs run without one unless the configuration allows shells", a)
		}
		allowed[a], allowed[path] = path, path
	}
	for k := range cfg.Env {
		if err := CheckName(k); err != nil {
			return nil, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "env", Message: err.Error()}
		}
	}
	h, err := NewHost(HostConfig{Users: cfg.Users, Cgroup: cfg.Cgroup, OutputDir: cfg.OutputDir, OutputCap: cfg.OutputCap,
		Grace: cfg.Grace, StoppedTTL: cfg.StoppedTTL, MaxFrozen: cfg.MaxFrozen, Meter: cfg.Meter, Logger: cfg.Logger, FilesBytes: cfg.FilesBytes, FilesCount: cfg.FilesCount})
	if err != nil {
		return nil, err
	}
	return &Runner{Host: h, cfg: cfg, allowed: allowed}, nil
}

// CheckName says what is wrong with an environment variable's name.
func CheckName(k string) error {
	if k == "" || strings.ContainsAny(k, "=\x00") {
		return fmt.Errorf("bad variable name %q", k)
	}
	return nil
}

// Check says whether the runner would start job: a meter to measure it,
// its command allowed, its variables allowed. It refuses every job with
// EUnmetered without a meter, a missing job or command with
// EJobUnsupported and anything the configuration does not allow with
// EPermission.
func (r *Runner) Check(job *contract.JobSpec) error {
	if r.cfg.Meter == nil {
		return r.unmetered("process.Check")
	}
	_, _, err := r.prepare(job)
	return err
}

// prepare resolves the job's program and builds the job's own variables.
func (r *Runner) prepare(job *contract.JobSpec) (path string, env map[string]string, err error) {
	const op = "process.Check"
	if job == nil || job.Command == "" {
		return "", nil, &bourse.Error{Code: bourse.EJobUnsupported, Op: op, Field: "job.command", Message: "this server runs programs: the offer must name a command"}
	}
	path, ok := r.allowed[job.Command]
	if !ok {
		return "", nil, &bourse.Error{Code: bourse.EPermission, Op: op, Field: "job.command", Message: contract.NotAllowed(job.Command, r.programs())}
	}
	for _, a := range job.Args {
		if strings.ContainsRune(a, 0) {
			return "", nil, &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "job.args", Message: "an argument holds a NUL byte"}
		}
	}
	if err := r.checkEnvArgs(path, job.Args); err != nil {
		return "", nil, err
	}
	if env, err = JobEnv(op, job.Env, r.cfg.AllowEnv); err != nil {
		return "", nil, err
	}
	return path, env, nil
}

// Start starts the job's process group, or thaws the frozen job that the
// assignment resumes when it was frozen on the same GPUs.
func (r *Runner) Start(ctx context.Context, a server.Assignment) (server.Job, error) {
	const op = "process.Start"
	if r.cfg.Meter == nil {
		return nil, r.unmetered(op)
	}
	path, jobEnv, err := r.prepare(a.Job)
	if err != nil {
		return nil, err
	}
	freezable := jobEnv[CheckpointEnv] == "none"
	if j, ok, err := r.Resume(a, freezable); ok {
		return j, err
	}
	devices := Devices(a.GPUs, r.cfg.Devices)
	j, err := r.Run(ctx, a, freezable, func(s Slot) (Launch, error) {
		env := map[string]string{}
		if s.UID >= 0 {
			// Its own folder for what programs keep in HOME and TMPDIR,
			// where no later job of its user finds it.
			env["HOME"], env["TMPDIR"] = s.Work, s.Work
		}
		for k, v := range r.cfg.Env {
			env[k] = v
		}
		for k, v := range jobEnv {
			env[k] = v
		}
		env["CUDA_VISIBLE_DEVICES"] = devices
		env["NVIDIA_VISIBLE_DEVICES"] = devices
		env["BOURSE_CONTRACT"] = a.Contract
		env[ResultsEnv] = s.Results
		return Launch{Path: path, Name: a.Job.Command, Args: a.Job.Args, Env: env, Dir: s.Work}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", op, a.Job.Command, err)
	}
	return j, nil
}

// Devices is the value of CUDA_VISIBLE_DEVICES for gpus: each one's
// identifier in ids (a UUID, or a MIG slice's), else its index.
func Devices(gpus []contract.GPU, ids map[int]string) string {
	out := make([]string, len(gpus))
	for i, g := range gpus {
		if id, ok := ids[g.Index]; ok {
			out[i] = id
		} else {
			out[i] = strconv.Itoa(g.Index)
		}
	}
	return strings.Join(out, ",")
}
