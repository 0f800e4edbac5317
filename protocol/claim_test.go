package protocol_test

import (
	"testing"
	"time"

	json "github.com/go-json-experiment/json/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// An accept's claim on the server's GPUs travelled as hold_for until it
// was named claim_for. A server and an exchange one release apart must
// still understand each other both ways.
func TestDecisionClaimFor(t *testing.T) {
	five := contract.Duration(5 * time.Second)

	t.Run("Writes", func(t *testing.T) {
		data, err := protocol.Marshal(protocol.Decision{Accept: true, ClaimFor: five})
		require.NoError(t, err)
		assert.JSONEq(t, `{"accept":true,"claim_for":"5s"}`, string(data))
	})

	t.Run("ReadsTheOldName", func(t *testing.T) {
		// What a server one release behind answers.
		old := []byte(`{"accept":true,"hold_for":"5s"}`)
		for name, decode := range map[string]func([]byte, any) error{
			"Strict": protocol.Unmarshal, "Lenient": json.Unmarshal,
		} {
			t.Run(name, func(t *testing.T) {
				var d protocol.Decision
				require.NoError(t, decode(old, &d))
				assert.True(t, d.Accept)
				assert.Equal(t, five, d.Claim())
			})
		}
	})

	t.Run("NewNameWins", func(t *testing.T) {
		var d protocol.Decision
		require.NoError(t, protocol.Unmarshal([]byte(`{"accept":true,"claim_for":"2s","hold_for":"5s"}`), &d))
		assert.Equal(t, contract.Duration(2*time.Second), d.Claim())
	})

	t.Run("ReadByAnExchangeOneReleaseBehind", func(t *testing.T) {
		// The Decision before the rename, decoded as the exchange decodes a
		// server's answer (leniently: a newer server's fields are skipped).
		type oldDecision struct {
			Accept   bool               `json:"accept"`
			HoldFor  contract.Duration  `json:"hold_for,omitempty"`
			Counters []contract.Counter `json:"counters,omitempty"`
			Reason   string             `json:"reason,omitempty"`
		}
		data, err := protocol.Marshal(protocol.Decision{Accept: true, ClaimFor: five})
		require.NoError(t, err)
		var d oldDecision
		require.NoError(t, json.Unmarshal(data, &d))
		assert.True(t, d.Accept, "an old exchange still sees the accept")
	})
}
