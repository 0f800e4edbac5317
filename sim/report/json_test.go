package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/sim/metrics"
)

func TestJSONRoundTrip(t *testing.T) {
	rs := ordered(fixture())
	var buf bytes.Buffer
	require.NoError(t, JSON(&buf, rs))

	var back []metrics.Result
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	for i := range rs {
		// Wall-clock figures are not part of the output.
		rs[i].Summary.Wall, rs[i].Summary.JobsPerSec = 0, 0
	}
	assert.Equal(t, rs, back)
}

func TestJSONOrder(t *testing.T) {
	// Runs finishing in another order give the same bytes, as long as
	// each policy first appears in the same place.
	rs := fixture()
	var a, b bytes.Buffer
	require.NoError(t, JSON(&a, rs))
	swapped := append([]metrics.Result(nil), rs...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	swapped[3], swapped[5] = swapped[5], swapped[3]
	require.NoError(t, JSON(&b, swapped))
	assert.Equal(t, a.String(), b.String())
}

func TestJSONErrors(t *testing.T) {
	t.Run("Empty", func(t *testing.T) {
		assert.ErrorIs(t, JSON(&bytes.Buffer{}, nil), errNoResults)
	})
	t.Run("NaN", func(t *testing.T) {
		rs := fixture()
		rs[0].Summary.Revenue = math.NaN()
		assert.ErrorContains(t, JSON(&bytes.Buffer{}, rs), "report: encode JSON")
	})
}
