//go:build !linux

package process

import "syscall"

// sysProcAttr puts the job in a session and process group of its own, as
// its user where it has one. Only Linux has cgroups (none is made
// elsewhere) and can kill a job when the agent dies (see proc_linux.go).
func sysProcAttr(cred *syscall.Credential, _ int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Credential: cred}
}
