//go:build !linux

package process

import "syscall"

// sysProcAttr puts the job in a process group of its own. Only Linux can
// kill a job when the agent dies (see proc_linux.go).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
