package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestBidShowAndWait: show prints one contract in full, wait ends when it
// does with the status its end gives (a job's own status is
// TestRealJobs/WaitAndShow's).
func TestBidShowAndWait(t *testing.T) {
	b := startBidMarket(t)

	t.Run("Completed", func(t *testing.T) {
		k := b.offerJSON("ada", short("300ms")...)
		out, errOut, code := b.bid("ada", "wait", k.ID)
		require.Equal(t, 0, code, errOut)
		assert.Regexp(t, `^`+k.ID+` settled \(completed\), the job exited 0: charged 0\.12, refunded 23\.88 CRED\n$`, out)

		out = b.ok("ada", "show", k.ID)
		for _, want := range []string{"Contract     " + k.ID + "\n", "Server       atlas\n", "State        settled (completed)\n",
			"GPUs         1× H100\n", "Time limit   1m0s\n", "Price        0.4/GPU-s (1440.00/GPU-h)\n", "Prepayment   24.00 CRED\n",
			"Job          synthetic: each GPU busy 1 of the time for 300ms\n", "Meter        synthetic\n",
			"Charge       0.12 CRED\n", "Refund       23.88 CRED\n", "Output       none: contract " + k.ID + " ran no program, so it has no output: its terms name no program and no image\n"} {
			assert.Contains(t, out, want)
		}
		assert.Contains(t, out, "Exit status  0\n", "a synthetic job that ran its whole profile exits 0")

		// describe: show's fields, what happened, and the money it moved.
		d := b.ok("ada", "describe", k.ID)
		assert.Contains(t, d, "Contract     "+k.ID+"\n")
		assert.Regexp(t, `(?s)Events:\n.*accepted by atlas; prepayment escrowed.*started on atlas's GPUs \[\d\] \(H100\), metered by synthetic.*reading #\d+, final: .*settled \(completed\)\n`, d)
		assert.Regexp(t, `(?s)Money \(your wallet's statement\):\n.*-24\.00 CRED.*\+23\.88 CRED`, d)
		var dj struct {
			Events []protocol.Happening `json:"events"`
			Money  []json.RawMessage    `json:"money"`
		}
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "describe", k.ID)), &dj))
		assert.GreaterOrEqual(t, len(dj.Events), 4)
		assert.Len(t, dj.Money, 2, "the escrow and the refund")

		var got protocol.ContractView
		require.NoError(t, json.Unmarshal([]byte(b.ok("ada", "--json", "show", k.ID)), &got))
		assert.Equal(t, k.ID, got.ID)
		assert.Equal(t, contract.StateSettled, got.State)
		require.NotNil(t, got.Reading)
		assert.True(t, got.Reading.Final)
	})

	t.Run("Killed", func(t *testing.T) {
		k := b.offerJSON("ada", short("30s")...)
		done := make(chan int, 1)
		var out, errOut lockedBuffer
		go func() {
			done <- run(context.Background(), []string{"bid", "--nats", b.m.URL(), "--id", "ada", "wait", k.ID}, &out, &errOut)
		}()
		b.waitState("ada", k.ID, contract.StateRunning)
		running := b.ok("ada", "show", k.ID)
		assert.Contains(t, running, "State        running\n")
		assert.Contains(t, running, "Charge       -\n", "not known until it ends")
		b.ok("ada", "kill", k.ID)
		select {
		case code := <-done:
			assert.Equal(t, exitFailure, code, "ended without the job's own status, and not completed: %s", errOut.String())
		case <-time.After(20 * time.Second):
			t.Fatal("wait did not end")
		}
		assert.Regexp(t, `^`+k.ID+` settled \(killed\): charged`, out.String())
	})

	t.Run("NotYours", func(t *testing.T) {
		k := b.offerJSON("ada", short("100ms")...)
		for _, verb := range []string{"show", "wait"} {
			_, errOut, code := b.bid("bob", verb, k.ID)
			assert.Equal(t, exitRefused, code, "%s: %s", verb, errOut)
			assert.Contains(t, errOut, "not_found")
			_, _, code = b.bid("ada", verb, "c-nosuch")
			assert.Equal(t, exitRefused, code)
		}
	})
}

// TestJobStatus: what bid wait exits with, by how the contract ended
// and what its job reported: a contract that did not complete never
// exits 0, even where the job's status says 0 (a synthetic job whose
// profile ran out as its time limit came reports 0).
func TestJobStatus(t *testing.T) {
	exit := func(n int) *contract.Reading { return &contract.Reading{ExitCode: &n} }
	for _, tc := range []struct {
		name   string
		state  contract.State
		reason contract.Reason
		r      *contract.Reading
		want   int
	}{
		{"CompletedSynthetic", contract.StateSettled, contract.ReasonCompleted, nil, 0},
		{"CompletedExit0", contract.StateSettled, contract.ReasonCompleted, exit(0), 0},
		{"CompletedExit3", contract.StateSettled, contract.ReasonCompleted, exit(3), 3},
		{"CompletedExit256", contract.StateSettled, contract.ReasonCompleted, exit(256), 0},
		{"TimeLimitExit0", contract.StateSettled, contract.ReasonTimeLimit, exit(0), exitFailure},
		{"TimeLimitNoStatus", contract.StateSettled, contract.ReasonTimeLimit, nil, exitFailure},
		{"TimeLimitSIGTERM", contract.StateSettled, contract.ReasonTimeLimit, exit(143), 143},
		{"KilledExit0", contract.StateSettled, contract.ReasonKilled, exit(0), exitFailure},
		{"Voided", contract.StateVoided, contract.ReasonNotStarted, nil, exitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := protocol.ContractView{}
			k.State, k.Reason, k.Reading = tc.state, tc.reason, tc.r
			assert.Equal(t, tc.want, jobStatus(k))
		})
	}
}

// TestJobTextImage: bourse bid show says which image a job runs, and
// what of it: the command that replaces its entrypoint, the arguments
// that replace its command, or its own entrypoint and command.
func TestJobTextImage(t *testing.T) {
	view := func(j contract.JobSpec) protocol.ContractView {
		return protocol.ContractView{Terms: contract.Terms{Job: &j}}
	}
	const ref = "ghcr.io/acme/train@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	assert.Equal(t, "image "+ref+": its entrypoint and command", jobText(view(contract.JobSpec{Image: ref})))
	assert.Equal(t, "image busybox: its entrypoint with --epochs=3 \"a b\"", jobText(view(contract.JobSpec{Image: "busybox", Args: []string{"--epochs=3", "a b"}})))
	assert.Equal(t, "image busybox: /bin/sh -c \"echo hi\"", jobText(view(contract.JobSpec{Image: "busybox", Command: "/bin/sh", Args: []string{"-c", "echo hi"}})))
	assert.Equal(t, "/usr/bin/python3 train.py", jobText(view(contract.JobSpec{Command: "/usr/bin/python3", Args: []string{"train.py"}})))
}
