package container

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// refused are the system calls a job never needs and that widen what a
// kernel bug could give it: most need a capability a job does not have
// and fail anyway; the rest (user namespaces, keyrings, BPF, userfaultfd,
// perf events) an unprivileged process may make, and docker's default
// profile refuses them too.
var refused = []string{
	"unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	"keyctl", "add_key", "request_key", "bpf", "userfaultfd", "perf_event_open",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "open_by_handle_at", "name_to_handle_at",
	"lookup_dcookie", "iopl", "ioperm", "syslog", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
}

// seccomp allows every system call but those refused, which fail with
// EPERM, and a clone that makes a namespace; clone3, whose flags a filter
// cannot read, fails with ENOSYS, so that the C library falls back to
// clone, as docker's profile has it.
func seccomp() *specs.LinuxSeccomp {
	eperm, enosys := uint(unix.EPERM), uint(unix.ENOSYS)
	calls := []specs.LinuxSyscall{
		{Names: refused, Action: specs.ActErrno, ErrnoRet: &eperm},
		{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
	}
	// One rule a flag: rules of a call are alternatives, and a filter
	// can test a masked argument for equality only.
	for _, flag := range namespaceFlags {
		calls = append(calls, specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
			Args: []specs.LinuxSeccompArg{{Index: 0, Value: flag, ValueTwo: flag, Op: specs.OpMaskedEqual}}})
	}
	return &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32, specs.ArchAARCH64, specs.ArchARM},
		Syscalls:      calls,
	}
}

// namespaceFlags are clone's flags that make namespaces.
var namespaceFlags = []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC, unix.CLONE_NEWUSER,
	unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWCGROUP}
