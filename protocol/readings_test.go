package protocol_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/protocol"
)

// TestReadingsRoundTrip: a readings message carries each reading's bytes
// exactly as signed, with its signature, whatever the bytes hold.
func TestReadingsRoundTrip(t *testing.T) {
	var bodies [][]byte
	sigs := []string{"sig-1", "", `odd "sig"`}
	for i, id := range []string{"c-1", "c-2", "c-<&>"} {
		r := contract.Reading{Contract: id, Seq: uint64(i + 1), U: dectest.D("1.5"), T: contract.Duration(2 * time.Second), S: dectest.D("1"),
			At: time.Date(2026, 11, 21, 12, 0, i, 0, time.UTC)}
		b, err := protocol.Marshal(r)
		require.NoError(t, err)
		bodies = append(bodies, b)
	}
	msg := protocol.AppendReadings(nil, bodies, sigs)
	got, err := protocol.DecodeReadings(msg)
	require.NoError(t, err)
	require.Len(t, got.Readings, 3)
	for i, s := range got.Readings {
		assert.Equal(t, string(bodies[i]), string(s.Reading), "reading %d byte for byte", i)
		assert.Equal(t, sigs[i], s.Sig)
	}
	assert.True(t, strings.HasPrefix(protocol.ReadingsMsgID("gpu1", msg), "gpu1:readings:"))
	assert.Equal(t, protocol.ReadingsMsgID("gpu1", msg), protocol.ReadingsMsgID("gpu1", append([]byte(nil), msg...)), "the same body, the same id")

	_, err = protocol.DecodeReadings([]byte(`{"readings":[{"reading":{},"extra":1}]}`))
	assert.Error(t, err, "strict: no unknown fields")
}
