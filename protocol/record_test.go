package protocol_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/protocol"
)

// TestCanariesDemote: who a server's canaries demote. A failure demotes
// until two canaries pass after it, whatever passed before it (a server
// cannot bank passes and then lie); inconclusive canaries count for no
// one.
func TestCanariesDemote(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    *protocol.Canaries
		want bool
	}{
		{"None", nil, false},
		{"Passed", &protocol.Canaries{Run: 5, Passed: 5}, false},
		{"Inconclusive", &protocol.Canaries{Run: 6, Inconclusive: 6}, false},
		{"OneFailure", &protocol.Canaries{Run: 1, Failed: 1}, true},
		{"PassesBeforeAFailure", &protocol.Canaries{Run: 7, Passed: 6, Failed: 1}, true},
		{"OnePassSince", &protocol.Canaries{Run: 3, Passed: 2, Failed: 1, PassedSince: 1}, true},
		{"TwoPassesSince", &protocol.Canaries{Run: 3, Passed: 2, Failed: 1, PassedSince: 2}, false},
		{"MendedAfterMany", &protocol.Canaries{Run: 5, Passed: 2, Failed: 3, PassedSince: 2}, false},
		{"InconclusiveSince", &protocol.Canaries{Run: 4, Failed: 1, Inconclusive: 3}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.c.Demotes())
			var r protocol.Record
			r.Canaries = tt.c
			assert.Equal(t, tt.want, r.Demotes(), "a record demotes as its canaries do")
		})
	}
}
