package process

import "syscall"

// sysProcAttr puts the job in a session and process group of its own (a
// job shares no session with the agent or another job, so that it may not
// even send them SIGCONT), as its user and into its cgroup where it has
// them (cgroupFD ≥ 0: the kernel starts it there, CLONE_INTO_CGROUP), and
// has the kernel send its leader SIGKILL when the agent dies, so that a job
// does not outlive an agent killed without a chance to stop it (SIGKILL, a
// crash, the OOM killer).
//
// Linux sends the death signal when the thread that started the child
// exits, not the process. Go threads do not exit while the process runs,
// except one a goroutine locked with runtime.LockOSThread and ended
// without unlocking; the runner starts jobs on the agent's ordinary
// goroutines, which lock no thread, so the signal fires only when the
// agent's process does. The signal reaches the leader alone: the job's
// other processes outlive it until the agent's next start, which kills
// every process its job users run and removes the cgroups of agents no
// longer running with what is left in them.
func sysProcAttr(cred *syscall.Credential, cgroupFD int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if cgroupFD >= 0 {
		a.UseCgroupFD, a.CgroupFD = true, cgroupFD
	}
	return a
}
