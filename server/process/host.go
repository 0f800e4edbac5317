package process

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/spool"
)

// HostConfig configures a Host: the part of Config about keeping jobs
// apart and whole, whatever runs them. The zero values have the
// defaults Config's have.
type HostConfig struct {
	Users      []string // Config.Users
	Cgroup     string   // Config.Cgroup
	OutputDir  string   // Config.OutputDir
	OutputCap  int64    // Config.OutputCap
	Grace      time.Duration
	StoppedTTL time.Duration // Config.StoppedTTL
	MaxFrozen  int           // Config.MaxFrozen
	Meter      server.Meter  // required by Run
	Logger     *slog.Logger
	// FilesBytes bounds a job's files (contract.Files), fetched and
	// unpacked, DefaultFilesBytes if 0; a negative FilesBytes takes no
	// files. FilesCount bounds the entries of their archive,
	// DefaultFilesCount if 0.
	FilesBytes int64
	FilesCount int64
}

// Host keeps a server's jobs apart and whole, whatever starts them: it
// gives each job a user of the pool and a cgroup of its own where it has
// them, and its output, results and working folders; it starts the job's
// leader with its output captured, meters every process of the job, stops
// them all, keeps a job frozen by a suspend for its resume (within
// bounds: frozen.go), and gives back what the job held once none of its
// processes is left. The process runner runs programs on a Host; package
// container runs containers on one.
type Host struct {
	cfg     HostConfig
	log     *slog.Logger
	users   *users   // nil: jobs run as the agent's user
	cgroups *cgroups // nil: jobs get no cgroup
	// maxFrozen is the most jobs kept frozen at once (MaxFrozen resolved):
	// 0 freezes none.
	maxFrozen int

	mu      sync.Mutex
	stopped map[string]*proc // frozen by a suspend, by contract
	running map[*proc]bool   // every job's process group until it is gone
}

// NewHost checks cfg, makes the output directory, and opens the job users
// and cgroups it asks for.
func NewHost(cfg HostConfig) (*Host, error) {
	const op = "process.New"
	maxFrozen, err := frozenBound(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Users) > 0 {
		if err := checkSwitchUsers(); err != nil {
			return nil, err
		}
	}
	if cfg.OutputDir == "" {
		cfg.OutputDir = filepath.Join(os.TempDir(), "bourse-jobs")
	}
	if cfg.OutputDir, err = filepath.Abs(cfg.OutputDir); err != nil {
		return nil, fmt.Errorf("%s: output directory: %w", op, err)
	}
	if err := os.MkdirAll(cfg.OutputDir, 0o750); err != nil {
		return nil, fmt.Errorf("%s: output directory: %w", op, err)
	}
	if cfg.OutputCap <= 0 {
		cfg.OutputCap = DefaultOutputCap
	}
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.StoppedTTL <= 0 {
		cfg.StoppedTTL = DefaultStoppedTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.FilesBytes == 0 {
		cfg.FilesBytes = DefaultFilesBytes
	}
	if cfg.FilesCount <= 0 {
		cfg.FilesCount = DefaultFilesCount
	}
	removeFetched(cfg.OutputDir)
	h := &Host{cfg: cfg, log: cfg.Logger, maxFrozen: maxFrozen, stopped: map[string]*proc{}}
	if err := h.isolate(); err != nil {
		return nil, err
	}
	return h, nil
}

// Slot is what a job holds on the host before its leader starts.
type Slot struct {
	Contract string
	// Dir is the contract's output folder; Results ($BOURSE_RESULTS) and
	// Work (where the job runs, removed when it ends) are in it, the
	// job's own.
	Dir, Results, Work string
	// UID and GID are the job user's, and Groups its groups; -1 where the
	// job runs as the agent's own user.
	UID, GID int
	Groups   []uint32
	// Cgroup is the job's cgroup v2 as /proc/<pid>/cgroup names it, and
	// CgroupDir its folder; "" where the job has none.
	Cgroup, CgroupDir string
}

// Launch is how a job's leader starts.
type Launch struct {
	Path string   // the program to execute
	Name string   // argv[0], and the job's name in logs
	Args []string // after argv[0]
	Env  map[string]string
	Dir  string // where the leader starts
	// Contained is a leader that starts as the agent's own user, outside
	// the job's cgroup, and puts the job's processes in the slot's cgroup
	// as its user itself (an OCI runtime): the job is still every process
	// of that user and cgroup, metered and stopped as a whole. A contained
	// job with a cgroup is frozen by the cgroup's freezer.
	Contained bool
	// Cleanup runs once every process of the job is gone, before the
	// slot's cgroup and user are given back.
	Cleanup func()
}

// Run gives a job of the assignment a slot, asks build how to start its
// leader there, starts it and meters it. freezable is a job that
// cannot checkpoint: a suspend freezes it for a resume (Resume) rather
// than stopping it, where the host keeps frozen jobs (MaxFrozen). The
// job's user is a free one of the pool, else a frozen job's, which is
// ended for it (frozen.go). A job that names files has them fetched first
// (within ctx), checked against its terms and unpacked into its working
// folder before build is asked; the meter starts only with the leader,
// so that the fetch is not charged. A job that does not start gives the
// slot back, and its output folder says why (stderr) and that it did
// not start (exit), for its client.
func (h *Host) Run(ctx context.Context, a server.Assignment, freezable bool, build func(Slot) (Launch, error)) (server.Job, error) {
	if len(a.GPUs) == 0 {
		return nil, bourse.Errorf(bourse.EInvalid, "process.Start", "no GPUs assigned")
	}
	var arc *archive
	if f := jobFiles(a); f != nil {
		var err error
		if arc, err = h.fetchFiles(ctx, a, *f); err != nil {
			h.NotStarted(a.Contract, err)
			return nil, err
		}
		defer arc.Close()
	}
	dir := filepath.Join(h.cfg.OutputDir, a.Contract)
	s := Slot{Contract: a.Contract, Dir: dir, Results: filepath.Join(dir, spool.ResultsDir), Work: filepath.Join(dir, WorkDir), UID: -1, GID: -1}
	var u *jobUser
	var err error
	if h.users != nil {
		if u, err = h.takeUser(a); err != nil {
			return nil, err
		}
		s.UID, s.GID, s.Groups = u.uid, u.gid, u.groups
	}
	var cg *cgroup
	if h.cgroups != nil {
		if cg, err = h.cgroups.make(a.Contract); err != nil {
			h.users.giveBack(u)
			return nil, err
		}
		s.Cgroup, s.CgroupDir = cg.rel, cg.dir
	}
	log := h.log.With("contract", a.Contract)
	var cleanup func()
	release := h.release(dir, u, cg, log, func() {
		if cleanup != nil {
			cleanup()
		}
	})
	notStarted := func(err error) (server.Job, error) {
		release()
		h.NotStarted(a.Contract, err)
		return nil, err
	}
	if err := makeFolders(dir, s.Results, s.Work, u); err != nil {
		return notStarted(err)
	}
	if arc != nil {
		if err := h.unpackFiles(arc, s); err != nil {
			return notStarted(err)
		}
	}
	l, err := build(s)
	cleanup = l.Cleanup
	if err != nil {
		return notStarted(err)
	}
	sp := spec{path: l.Path, name: l.Name, args: l.Args, env: l.Env, dir: dir, work: l.Dir,
		outputCap: h.cfg.OutputCap, user: u, cgroup: cg, contained: l.Contained, release: release, log: log}
	p, err := startProc(sp)
	if err != nil {
		return notStarted(err)
	}
	h.keep(p)
	log.Info("job started", "pid", p.pid, "command", l.Path, "output", dir, "user", u.String(), "cgroup", cg.String())
	return h.track(a, p, freezable)
}

// NotStarted writes, for the client of a contract whose job did not
// start, why in its stderr and "not started" as its exit: its output is
// complete, and the spool sends it.
func (h *Host) NotStarted(contract string, why error) {
	dir := filepath.Join(h.cfg.OutputDir, contract)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		h.log.Warn("record a job that did not start", "contract", contract, "err", err)
		return
	}
	_ = os.WriteFile(filepath.Join(dir, spool.StderrFile), []byte("bourse: the job did not start: "+bourse.ErrorMessage(why)+"\n"), 0o640)
	_ = os.WriteFile(filepath.Join(dir, spool.ExitFile), []byte("not started\n"), 0o640)
}

// Resume returns the frozen job that the assignment resumes, thawed, as
// its job, where it was frozen on the same GPUs; ok is false where there
// is none.
func (h *Host) Resume(a server.Assignment, freezable bool) (job server.Job, ok bool, err error) {
	p := h.takeStopped(a)
	if p == nil {
		return nil, false, nil
	}
	// The thawed process still writes to the suspended contract's
	// output; this contract's says so, and ends at once.
	dir := filepath.Join(h.cfg.OutputDir, a.Contract)
	note := []byte("resumed: output in " + a.Resumes + "\n")
	if err := os.MkdirAll(dir, 0o750); err == nil {
		_ = os.WriteFile(filepath.Join(dir, spool.StderrFile), note, 0o640)
		_ = os.WriteFile(filepath.Join(dir, spool.ExitFile), note, 0o640)
	}
	job, err = h.track(a, p, freezable)
	return job, true, err
}

// track wraps a running process group as the contract's job.
func (h *Host) track(a server.Assignment, p *proc, freezable bool) (server.Job, error) {
	// The gauge starts before the job's clock, so that a meter that
	// counts time (FullUse) never falls short of GPUs × T.
	g, err := h.cfg.Meter.Track(a.GPUs, p.owns)
	if err != nil {
		// Running unmetered would give the GPUs away.
		p.kill()
		return nil, fmt.Errorf("process.Start: meter: %w", err)
	}
	j := &job{
		host:       h,
		contract:   a.Contract,
		proc:       p,
		gpus:       a.GPUs,
		canFreeze:  freezable && h.maxFrozen > 0,
		started:    time.Now(),
		gauge:      g,
		done:       make(chan struct{}),
		stopSignal: make(chan struct{}),
	}
	if a.TimeLimit > 0 {
		j.limit = time.AfterFunc(a.TimeLimit, func() {
			h.log.Warn("time limit reached; stopping the job", "contract", a.Contract)
			_ = j.Stop(context.Background(), contract.ReasonTimeLimit)
		})
	}
	go j.watch()
	return j, nil
}

// Cgroup is the cgroup the host makes its jobs' in, as /proc/<pid>/cgroup
// names it; "" where jobs get none.
func (h *Host) Cgroup() string {
	if h.cgroups == nil {
		return ""
	}
	return h.cgroups.rel
}

// OutputDir is where the jobs' output goes, a directory per contract.
func (h *Host) OutputDir() string { return h.cfg.OutputDir }

// OutputCap is the cap on each of a job's stdout and stderr.
func (h *Host) OutputCap() int64 { return h.cfg.OutputCap }

// keep counts p among the running process groups until it is gone, so
// that Close leaves none behind.
func (h *Host) keep(p *proc) {
	h.mu.Lock()
	if h.running == nil {
		h.running = map[*proc]bool{}
	}
	h.running[p] = true
	h.mu.Unlock()
	go func() {
		<-p.exited
		h.mu.Lock()
		delete(h.running, p)
		h.mu.Unlock()
	}()
}

// Close kills the frozen jobs the host keeps for a resume and any job
// still running (the agent stops its jobs before it closes the runner;
// one left would outlive everyone who could stop it, and write on into
// folders being removed), waits until they are gone, and removes its
// cgroup.
func (h *Host) Close() {
	h.mu.Lock()
	stopped := h.stopped
	h.stopped = map[string]*proc{}
	h.mu.Unlock()
	for _, p := range stopped {
		p.ttl.Stop()
		p.kill()
	}
	// A job still running has nobody to stop it now: its processes go,
	// and Close returns once they and their output are gone.
	h.mu.Lock()
	running := slices.Collect(maps.Keys(h.running))
	h.mu.Unlock()
	for _, p := range running {
		p.kill()
	}
	if h.cgroups != nil {
		_ = h.cgroups.close()
	}
}
