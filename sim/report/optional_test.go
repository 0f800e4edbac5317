package report

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoMatchRow: jobs no server fits get a row where some run had any,
// and none where no run did.
func TestNoMatchRow(t *testing.T) {
	rs := fixture()
	var buf bytes.Buffer
	require.NoError(t, Table(&buf, rs))
	assert.NotContains(t, buf.String(), "jobs no server fits")
	rs[len(rs)-1].Summary.NoMatch = 12 // reserve, seed 7
	buf.Reset()
	require.NoError(t, Table(&buf, rs))
	assert.Regexp(t, `(?m)^jobs no server fits +0 +0 +12$`, buf.String())
}
