package process

import "syscall"

// sysProcAttr puts the job in a process group of its own and has the
// kernel send its leader SIGKILL when the agent dies, so that a job does
// not outlive an agent killed without a chance to stop it (SIGKILL, a
// crash, the OOM killer).
//
// Linux sends the death signal when the thread that started the child
// exits, not the process. Go threads do not exit while the process runs,
// except one a goroutine locked with runtime.LockOSThread and ended
// without unlocking; the runner starts jobs on the agent's ordinary
// goroutines, which lock no thread, so the signal fires only when the
// agent's process does. The signal reaches the leader alone: processes
// the job started in its group outlive it unless the job passes the same
// care on to them.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
