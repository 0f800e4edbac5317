package process_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/process"
)

// TestRuns: the runner says what it runs for its server's hello (every
// name a job may give its programs, and its meter), and a program by
// another name is refused with the list, so that a client who wrote
// "sleep" where the list says "/bin/sleep" learns what to write.
func TestRuns(t *testing.T) {
	r, _ := newRunner(t, nil)
	self, err := filepath.Abs(os.Args[0])
	require.NoError(t, err)
	runs := r.Runs()
	assert.Equal(t, protocol.RunnerProcess, runs.Runner)
	assert.Equal(t, contract.MeterFullUse, runs.Meter)
	assert.Contains(t, runs.Programs, "/bin/sleep")
	assert.Contains(t, runs.Programs, self)
	require.NoError(t, runs.Check())

	err = r.Check(&contract.JobSpec{Command: "sleep"})
	assert.Equal(t, bourse.EPermission, bourse.ErrorCode(err))
	assert.Contains(t, bourse.ErrorMessage(err), `"sleep" is not a program this server runs: it runs `)
	assert.Contains(t, bourse.ErrorMessage(err), "/bin/sleep")
	assert.Equal(t, bourse.ErrorMessage(err), bourse.ErrorMessage((*contract.Runs)(&runs).Refuses(&contract.JobSpec{Command: "sleep"})),
		"the hello's rule refuses it in the same words")

	bare, _ := newRunner(t, func(c *process.Config) { c.Meter = nil })
	assert.Empty(t, bare.Runs().Meter, "no meter: the hello says so")
	var _ server.Describer = r
}
