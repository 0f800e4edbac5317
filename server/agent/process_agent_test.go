package agent_test

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/agent"
	"github.com/bourse/bourse/server/process"
)

// helperEnv makes the test binary act as a process job: its value names
// the act.
const helperEnv = "BOURSE_TEST_HELPER"

func TestMain(m *testing.M) {
	if act := os.Getenv(helperEnv); act != "" {
		os.Exit(helper(act))
	}
	os.Exit(m.Run())
}

// helper is a job of the tests:
//
//	gpus    print CUDA_VISIBLE_DEVICES, then wait for SIGTERM and exit 3
//	ticks   print "tick i" every 20 ms; on SIGTERM print "bye" and exit 3
func helper(act string) int {
	switch act {
	case "ticks":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		for i := 0; ; i++ {
			select {
			case <-c:
				fmt.Println("bye")
				return 3
			case <-time.After(20 * time.Millisecond):
				fmt.Printf("tick %d\n", i)
			}
		}
	case "gpus":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Printf("CUDA_VISIBLE_DEVICES=%s\n", os.Getenv("CUDA_VISIBLE_DEVICES"))
		<-c
		return 3
	}
	fmt.Fprintln(os.Stderr, "unknown act", act)
	return 2
}

// TestAgentProcessRunner runs real processes under the agent: the process
// runner starts them on their GPUs, a kill and the time limit stop them,
// and the agent refuses offers of programs the runner does not allow.
func TestAgentProcessRunner(t *testing.T) {
	out := t.TempDir()
	pr, err := process.New(process.Config{Allowed: []string{os.Args[0]}, AllowEnv: []string{helperEnv},
		OutputDir: out, Grace: 5 * time.Second, Meter: server.FullUse{}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(pr.Close)
	x := newExchange(t, setup{})
	x.startAgent("gpu1", agent.Config{Runner: pr})
	job := func(act string) *contract.JobSpec {
		return &contract.JobSpec{Command: os.Args[0], Env: map[string]string{helperEnv: act}}
	}
	withJob := func(g int, limit time.Duration, j *contract.JobSpec) contract.Terms {
		tm := terms(g, limit, "0.01", "0.20", "1", time.Hour) // 20 GPU-seconds, fully used
		tm.Job = j
		return tm
	}

	t.Run("killed", func(t *testing.T) {
		tm := withJob(2, time.Hour, job("gpus"))
		require.True(t, x.offer("gpu1", protocol.ServerOffer{Offer: "o1", Terms: tm}).Accept)
		rs := x.readings("gpu1", "c1")
		st, err := x.start("gpu1", "o1", "c1", tm)
		require.NoError(t, err)
		require.Len(t, st.GPUs, 2)
		assert.Equal(t, contract.MeterFullUse, st.Meter, "the start says how the job is measured")
		stdout := filepath.Join(out, "c1", "stdout")
		want := fmt.Sprintf("CUDA_VISIBLE_DEVICES=%d,%d\n", st.GPUs[0], st.GPUs[1])
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(stdout)
			return string(b) == want
		}, 5*time.Second, 10*time.Millisecond, "the job did not say its GPUs")
		rd, _ := rs.next()
		require.Equal(t, uint64(1), rd.Seq)
		assert.True(t, rd.S.Equal(dectest.D("2")), "s = %s", rd.S)
		assert.True(t, rd.U.Equal(dectest.D("2").Mul(decimal.New(int64(rd.T), -9))), "full use: u = %s = 2 × t (%v)", rd.U, time.Duration(rd.T))

		require.NoError(t, natswire.DecodeError(x.control("gpu1", "c1", contract.ReasonKilled)))
		final := rs.final(rd.Seq)
		assert.Equal(t, contract.ReasonKilled, final.Reason)
		require.NotNil(t, final.ExitCode, "the exit code is reported")
		assert.Equal(t, 3, *final.ExitCode, "the job exits as it chooses on SIGTERM")
	})
	t.Run("time limit", func(t *testing.T) {
		// Two seconds, so that the job (a race-built test binary, slow
		// to start on a loaded machine) has set up its SIGTERM handler
		// when the limit comes: with 300 ms it was sometimes still
		// starting, died of the signal and reported no exit code of its
		// choosing.
		tm := withJob(1, 2*time.Second, job("gpus"))
		// Fully used, the prepayment runs out with the time: the limit
		// comes first.
		tm.P, tm.Prepayment = contract.Flat(dectest.D("1")), dectest.D("2")
		rs := x.readings("gpu1", "c2")
		_, err := x.start("gpu1", "o2", "c2", tm)
		require.NoError(t, err)
		final := rs.final(0)
		assert.Equal(t, contract.ReasonTimeLimit, final.Reason)
		// The node stops the job by its own clock, from the moment it
		// asked for the start; the job's T counts from the process's
		// spawn, a few milliseconds later.
		assert.GreaterOrEqual(t, time.Duration(final.T), 1900*time.Millisecond)
		assert.Less(t, time.Duration(final.T), 5*time.Second)
		require.NotNil(t, final.ExitCode)
		assert.Equal(t, 3, *final.ExitCode)
	})
	t.Run("unmetered", func(t *testing.T) {
		// A server whose runner has no meter refuses process jobs, and
		// says what its operator could choose.
		bare, err := process.New(process.Config{Allowed: []string{os.Args[0]}, AllowEnv: []string{helperEnv},
			OutputDir: t.TempDir(), NoMeter: "no NVIDIA driver", Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		x.startAgent("gpu2", agent.Config{Runner: bare})
		tm := withJob(1, time.Hour, job("gpus"))
		d := x.offer("gpu2", protocol.ServerOffer{Offer: "o-unmetered", Terms: tm})
		assert.False(t, d.Accept)
		assert.Equal(t, bourse.EUnmetered, d.Code, d.Reason)
		assert.Contains(t, d.Reason, "full_use")
	})
	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			job  *contract.JobSpec
			code bourse.Code
		}{
			{"program not allowed", &contract.JobSpec{Command: "/bin/rm", Args: []string{"-rf", "/"}}, bourse.EPermission},
			{"variable not allowed", &contract.JobSpec{Command: os.Args[0], Env: map[string]string{"LD_PRELOAD": "x.so"}}, bourse.EPermission},
			{"no command", &contract.JobSpec{Profile: &contract.Profile{Utilization: dectest.D("1"), Duration: time.Second}}, bourse.EJobUnsupported},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tm := withJob(1, time.Hour, tc.job)
				d := x.offer("gpu1", protocol.ServerOffer{Offer: "o-" + tc.name, Terms: tm})
				assert.False(t, d.Accept)
				assert.Equal(t, tc.code, d.Code, d.Reason)
				_, err := x.start("gpu1", "o-"+tc.name, "c-"+strings.ReplaceAll(tc.name, " ", "-"), tm)
				assert.Equal(t, tc.code, bourse.ErrorCode(err), "a start the offer skipped is refused too: %v", err)
			})
		}
	})
}
