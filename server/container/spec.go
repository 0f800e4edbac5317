package container

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server/process"
)

// Where a job's folders are inside its container.
const (
	WorkMount    = "/bourse/work"    // its working folder, writable, $HOME unless the image sets one
	ResultsMount = "/bourse/results" // $BOURSE_RESULTS
)

// ociVersion is the runtime specification the bundles follow: the one
// Debian 12's runc (1.1.5) implements; nothing newer is used.
const ociVersion = "1.0.2"

// defaultPath is a container's PATH where its image sets none, as docker
// gives it.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// container is what one job's container is made of: the runner's
// settings, the job's slot and image, and its GPUs' edits.
type container struct {
	slot    process.Slot
	image   ImageConfig
	job     *contract.JobSpec
	jobEnv  map[string]string // the job's variables, those the runner allows
	baseEnv map[string]string // the operator's, beneath the image's
	devices string            // CUDA_VISIBLE_DEVICES inside
	gpus    edits
	limits  limits
	network string
}

// argv is what runs: the offer's command and arguments in place of the
// image's entrypoint and command, its arguments alone in place of the
// image's command, or else the image's entrypoint and command, as docker
// run reads them.
func argv(img ImageConfig, job *contract.JobSpec) ([]string, error) {
	var args []string
	switch {
	case job.Command != "":
		args = append([]string{job.Command}, job.Args...)
	case len(job.Args) > 0:
		args = append(slices.Clone(img.Entrypoint), job.Args...)
	default:
		args = append(slices.Clone(img.Entrypoint), img.Cmd...)
	}
	if len(args) == 0 || args[0] == "" {
		return nil, &bourse.Error{Code: bourse.EInvalidOffer, Op: "container.Start", Field: "job.command",
			Message: fmt.Sprintf("the image %s names no entrypoint or command, and the offer none: name the program to run (job.command)", job.Image)}
	}
	return args, nil
}

// env is the container's environment: a default PATH, the operator's
// variables (defaults: the image knows what it needs), the image's, its
// GPUs' (CDI), the job's own, then the runner's (the GPUs, the contract,
// the results folder), each over the ones before; HOME is the working
// folder unless one of them sets it.
func (c *container) env() []string {
	vars := map[string]string{"PATH": defaultPath}
	var order []string // the image's order first, as it wrote them
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	setAll := func(m map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			set(k, m[k])
		}
	}
	setList := func(list []string) {
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				set(k, v)
			}
		}
	}
	setAll(c.baseEnv)
	setList(c.image.Env)
	setList(c.gpus.env)
	setAll(c.jobEnv)
	if _, ok := vars["HOME"]; !ok {
		set("HOME", WorkMount)
	}
	if c.gpus.libPath != "" {
		set("LD_LIBRARY_PATH", strings.Trim(vars["LD_LIBRARY_PATH"]+":"+c.gpus.libPath, ":"))
	}
	set("CUDA_VISIBLE_DEVICES", c.devices)
	set("NVIDIA_VISIBLE_DEVICES", c.devices)
	set("BOURSE_CONTRACT", c.slot.Contract)
	set(process.ResultsEnv, ResultsMount)
	out := []string{"PATH=" + vars["PATH"]}
	for _, k := range order {
		if k != "PATH" {
			out = append(out, k+"="+vars[k])
		}
	}
	return out
}

// spec is the container's OCI runtime configuration: a read-only root,
// its folders, a bounded /tmp and /dev/shm, its job user whatever the
// image says, no capabilities and no new privileges, its cgroup and
// limits, namespaces of its own (a network of its own, with only a
// loopback, unless the operator allows the host's), exactly its GPUs'
// devices, runc's masked and read-only /proc paths, and a seccomp filter
// against what a job never needs.
func (c *container) spec() (*specs.Spec, error) {
	args, err := argv(c.image, c.job)
	if err != nil {
		return nil, err
	}
	cwd := WorkMount
	if c.image.WorkingDir != "" && strings.HasPrefix(c.image.WorkingDir, "/") {
		cwd = c.image.WorkingDir
	}
	none := []string{}
	gids := slices.Concat(c.slot.Groups, c.gpus.gids)
	s := &specs.Spec{
		Version:  ociVersion,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "job",
		Process: &specs.Process{
			User: specs.User{UID: uint32(c.slot.UID), GID: uint32(c.slot.GID), AdditionalGids: gids},
			Args: args,
			Env:  c.env(),
			Cwd:  cwd,
			// Every set empty: a job has no capability, as root in it
			// or not, and cannot gain one (no_new_privileges).
			Capabilities:    &specs.LinuxCapabilities{Bounding: none, Effective: none, Inheritable: none, Permitted: none, Ambient: none},
			NoNewPrivileges: true,
		},
		Mounts: c.mounts(),
		Hooks:  &c.gpus.hooks,
		Linux: &specs.Linux{
			CgroupsPath: c.slot.Cgroup,
			Namespaces:  c.namespaces(),
			Devices:     c.gpus.devices,
			Resources:   c.resources(),
			// runc spec's defaults.
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
				"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi",
				"/sys/devices/virtual/powercap"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			Seccomp:       seccomp(),
		},
	}
	return s, nil
}

func (c *container) namespaces() []specs.LinuxNamespace {
	ns := []specs.LinuxNamespace{{Type: specs.PIDNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace},
		{Type: specs.MountNamespace}, {Type: specs.CgroupNamespace}}
	if c.network != NetworkHost {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace}) // a new one: a loopback, nothing else
	}
	return ns
}

// mounts are the container's file systems beside its root.
func (c *container) mounts() []specs.Mount {
	tmp := "size=" + strconv.FormatInt(c.limits.TmpBytes, 10)
	m := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", tmp}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", tmp}},
		{Destination: WorkMount, Type: "bind", Source: c.slot.Work, Options: []string{"rbind", "nosuid", "nodev", "rw"}},
		{Destination: ResultsMount, Type: "bind", Source: c.slot.Results, Options: []string{"rbind", "nosuid", "nodev", "rw"}},
	}
	if c.network == NetworkHost {
		// The host's network is of little use without its names.
		for _, f := range []string{"/etc/resolv.conf", "/etc/hosts"} {
			m = append(m, specs.Mount{Destination: f, Type: "bind", Source: f, Options: []string{"rbind", "nosuid", "nodev", "noexec", "ro"}})
		}
	}
	return append(m, c.gpus.mounts...)
}

// resources are the cgroup's: no device but the defaults runc adds and
// the GPUs', and the limits.
func (c *container) resources() *specs.LinuxResources {
	r := &specs.LinuxResources{
		Devices: append([]specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}, c.gpus.allow...),
		Pids:    &specs.LinuxPids{Limit: &c.limits.Pids},
	}
	if c.limits.MemoryBytes > 0 {
		// Swap as large as the limit is no swap at all (memory+swap).
		r.Memory = &specs.LinuxMemory{Limit: &c.limits.MemoryBytes, Swap: &c.limits.MemoryBytes}
	}
	return r
}
