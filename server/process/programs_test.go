package process_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// TestProgramRunners: a program that runs the program its arguments name
// is refused like a shell, by its name, through a link, or as a login
// shell under another name, unless the configuration allows shells.
func TestProgramRunners(t *testing.T) {
	var paths []string
	for _, name := range []string{"env", "nice", "timeout", "xargs", "setsid", "nohup", "find", "su", "sudo", "busybox"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Logf("%s: not on this machine", name)
			continue
		}
		paths = append(paths, p)
	}
	dir := t.TempDir()
	if env, err := exec.LookPath("env"); err == nil {
		link := filepath.Join(dir, "launcher")
		if err := os.Symlink(env, link); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, link)
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		other := filepath.Join(dir, "tool") // a hard link: the same file under another name
		if err := os.Link(bash, other); err != nil {
			t.Logf("no hard link to %s here: %v", bash, err)
		} else {
			paths = append(paths, other)
		}
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			_, err := process.New(process.Config{Allowed: []string{p}, OutputDir: t.TempDir(), Cgroup: process.CgroupOff, Logger: quiet()})
			if bourse.ErrorCode(err) != bourse.EInvalid || !strings.Contains(bourse.ErrorMessage(err), "runs other programs") {
				t.Errorf("New allowing %s: %v; want it refused as a program that runs others", p, err)
			}
			r, err := process.New(process.Config{Allowed: []string{p}, AllowShell: true, OutputDir: t.TempDir(), Cgroup: process.CgroupOff, Logger: quiet()})
			if err != nil {
				t.Fatalf("New with allow_shell: %v", err)
			}
			r.Close()
		})
	}
}

// TestEnvArgs: where shells are allowed, an allowed env may set only the
// variables a job may set, takes no option, and runs only an allowed
// program by its path: it cannot reset CUDA_VISIBLE_DEVICES.
func TestEnvArgs(t *testing.T) {
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env here")
	}
	r, _ := newRunner(t, func(c *process.Config) {
		c.Allowed, c.AllowShell = []string{env, "/bin/sleep"}, true
	})
	for _, tt := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"ResetGPUs", []string{"CUDA_VISIBLE_DEVICES=0,1,2,3", "/bin/sleep", "1"}, false},
		{"ResetNVIDIA", []string{"NVIDIA_VISIBLE_DEVICES=all", "/bin/sleep", "1"}, false},
		{"Ignore", []string{"-i", "/bin/sleep", "1"}, false},
		{"IgnoreLong", []string{"--ignore-environment", "/bin/sleep", "1"}, false},
		{"Unset", []string{"-u", "CUDA_VISIBLE_DEVICES", "/bin/sleep", "1"}, false},
		{"SplitString", []string{"-S", "CUDA_VISIBLE_DEVICES=0 /bin/sleep 1"}, false},
		{"NotAllowedVar", []string{"LD_PRELOAD=/x.so", "/bin/sleep", "1"}, false},
		{"OtherProgram", []string{"/bin/ls"}, false},
		{"ByName", []string{"sleep", "1"}, false},
		{"Nested", []string{env, "CUDA_VISIBLE_DEVICES=0", "/bin/sleep", "1"}, false},
		{"Allowed", []string{"SEED=1", "/bin/sleep", "1"}, true},
		{"NestedAllowed", []string{env, "SEED=1", "/bin/sleep", "1"}, true},
		{"Print", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Check(&contract.JobSpec{Command: env, Args: tt.args})
			if tt.ok != (err == nil) || (err != nil && bourse.ErrorCode(err) != bourse.EPermission) {
				t.Errorf("env %q: %v; want ok=%v, else permission_denied", tt.args, err, tt.ok)
			}
		})
	}
	// What env prints is what the runner set.
	j := start(t, r, server.Assignment{Contract: "c1", Job: &contract.JobSpec{Command: env}, GPUs: gpus(2)})
	waitDone(t, j, 10*time.Second)
	if got := readFile(t, filepath.Join(r.OutputDir(), "c1", "stdout")); !strings.Contains(got, "CUDA_VISIBLE_DEVICES=2\n") {
		t.Errorf("env printed %q", got)
	}
}
