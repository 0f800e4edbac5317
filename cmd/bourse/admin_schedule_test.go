package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/internal/pgtest"
)

// TestAdminSchedule: one round of the treasury's scheduler from the
// command line pays alice's allowance's ended periods, then tops her up; a
// second round finds nothing due.
func TestAdminSchedule(t *testing.T) {
	ok := adminOK(t, pgtest.FreshDB(t))
	ok("currency", "CRED", "--scale", "2")
	ok("open", "acme", "--currency", "CRED")
	ok("open", "alice", "--currency", "CRED", "--parent", "acme")
	ok("grant", "acme", "100", "--currency", "CRED", "--key", "g1")
	ok("topup", "set", "alice", "--currency", "CRED", "--below", "10", "--to", "30", "--key", "t1")
	ok("allowance", "set", "alice", "--currency", "CRED", "--a", "1", "--start", "2026-01-01T00:00:00Z", "--key", "a1")

	out := ok("schedule", "run", "--now", "2026-01-01T02:30:00Z")
	assert.Regexp(t, `(?m)^allowance +wallet/CRED/alice +1\.00 +allowance/wallet/CRED/alice/v1/1$`, out, "money at CRED's places")
	assert.Regexp(t, `(?m)^allowance +wallet/CRED/alice +1\.00 +allowance/wallet/CRED/alice/v1/2$`, out)
	assert.Regexp(t, `(?m)^topup +wallet/CRED/alice +28\.00 +topup/CRED/alice/\d+$`, out)
	assert.Equal(t, "nothing due\n", ok("schedule", "run", "--now", "2026-01-01T02:30:00Z"))
	assert.Contains(t, ok("balance", "wallet/CRED/alice"), "available 30.00", "the allowance paid 2 first, the top-up the rest to 30")
	// The next period's payment, in JSON: at CRED's places too.
	assert.Regexp(t, `"wallet/CRED/alice": \[\s+\{\s+"period": 3,\s+"amount": "1\.00",`, ok("schedule", "run", "--now", "2026-01-01T03:30:00Z", "--json"))
}
