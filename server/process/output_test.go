package process_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// TestOutputLayout: a job finds its results directory in $BOURSE_RESULTS,
// which it may not set itself, and once it has exited its directory says
// so (exit, with its status), after its output: the spool's layout.
func TestOutputLayout(t *testing.T) {
	r, dir := newRunner(t, nil)
	j := start(t, r, server.Assignment{Contract: "c1", Job: helperJob("results")})
	if c := exitCode(t, waitDone(t, j, 10*time.Second)); c != 4 {
		t.Fatalf("exit status %d", c)
	}
	if got := readFile(t, filepath.Join(dir, "c1", "results", "out.txt")); got != "done" {
		t.Errorf("results/out.txt %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "c1", "stderr")); got != "wrote out.txt\n" {
		t.Errorf("stderr %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "c1", "exit")); got != "4\n" {
		t.Errorf("exit %q, want the status", got)
	}
	if r.OutputDir() != dir {
		t.Errorf("OutputDir %q, want %q", r.OutputDir(), dir)
	}
	job := &contract.JobSpec{Command: "/bin/sleep", Env: map[string]string{process.ResultsEnv: "/etc"}}
	if err := r.Check(job); bourse.ErrorCode(err) != bourse.EPermission {
		t.Errorf("a job setting %s: %v, want permission_denied", process.ResultsEnv, err)
	}
}
