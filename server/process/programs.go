package process

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bourse/bourse"
)

// runners are programs whose work is to run another program that their
// arguments name: shells, and the programs that run one under other
// conditions (env, nice, timeout, …) or as another user (sudo, su, …).
// Allowing one would allow every program, so New refuses them unless
// Config.AllowShell. An interpreter (python3 -c) is the program itself:
// the operator who allows it allows what it runs.
var runners = []string{
	// shells
	"sh", "bash", "rbash", "dash", "ash", "zsh", "ksh", "ksh93", "mksh", "pdksh", "oksh", "yash", "posh",
	"csh", "tcsh", "fish", "rc", "es", "elvish", "nu", "xonsh", "busybox", "toybox",
	// programs that run a program under other conditions
	"env", "nice", "ionice", "renice", "chrt", "taskset", "numactl", "timeout", "nohup", "stdbuf",
	"setsid", "setpriv", "setarch", "linux32", "linux64", "prlimit", "unshare", "nsenter", "chroot",
	"flock", "xargs", "parallel", "find", "watch", "time", "script", "expect", "run-parts",
	"start-stop-daemon", "daemonize", "systemd-run", "strace", "ltrace", "gdb", "valgrind", "perf",
	"make", "tmux", "screen", "firejail", "bwrap", "capsh",
	// programs that run one as another user
	"sudo", "su", "doas", "runuser", "pkexec", "sg", "newgrp",
}

// runsPrograms reports whether the program at path is one of runners, by
// its name or the name of what it links to, or is the same file as a
// shell of /etc/shells under another name.
func runsPrograms(path string) bool {
	if slices.Contains(runners, filepath.Base(path)) {
		return true
	}
	// /bin/sh is often a link to dash or busybox under another name.
	if real, err := filepath.EvalSymlinks(path); err == nil && slices.Contains(runners, filepath.Base(real)) {
		return true
	}
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	for _, sh := range loginShells() {
		if other, err := os.Stat(sh); err == nil && os.SameFile(fi, other) {
			return true
		}
	}
	return false
}

// loginShells are the programs /etc/shells lists.
func loginShells() []string {
	f, err := os.Open("/etc/shells")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "/") {
			out = append(out, line)
		}
	}
	return out
}

// checkEnvArgs holds an allowed env (which only AllowShell lets a
// configuration name) to the rules a job's own variables follow: each
// NAME=VALUE it sets must be one allow_env allows, so that it cannot reset
// CUDA_VISIBLE_DEVICES; it may take no option (-i, -u, -S and the rest
// clear or rewrite the environment); and the program it runs must be one
// the configuration allows, named as New resolved it, and is checked in
// turn.
func (r *Runner) checkEnvArgs(path string, args []string) error {
	const op = "process.Check"
	for isEnv(path) {
		i := 0
		for ; i < len(args); i++ {
			a := args[i]
			if strings.HasPrefix(a, "-") {
				return &bourse.Error{Code: bourse.EPermission, Op: op, Field: "job.args",
					Message: fmt.Sprintf("env's option %q is not allowed: a job's variables are the server's to set", a)}
			}
			k, _, ok := strings.Cut(a, "=")
			if !ok {
				break
			}
			if err := CheckName(k); err != nil || !EnvAllowed(r.cfg.AllowEnv, k) {
				return &bourse.Error{Code: bourse.EPermission, Op: op, Field: "job.args", Message: fmt.Sprintf("the job may not set %s", k)}
			}
		}
		if i == len(args) {
			return nil // env prints the environment
		}
		next, ok := r.allowed[args[i]]
		if !ok || !filepath.IsAbs(args[i]) {
			return &bourse.Error{Code: bourse.EPermission, Op: op, Field: "job.args",
				Message: fmt.Sprintf("env runs %q, which is not a program this server runs by that path", args[i])}
		}
		path, args = next, args[i+1:]
	}
	return nil
}

func isEnv(path string) bool {
	if filepath.Base(path) == "env" {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && filepath.Base(real) == "env"
}
