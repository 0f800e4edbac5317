package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/pgtest"
)

// bourseCmd runs a command line in this process and returns what it
// wrote and its exit status.
func bourseCmd(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// admin runs `bourse admin --db URL args…`.
func admin(t *testing.T, dbURL string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return bourseCmd(append([]string{"admin", "--db", dbURL}, args...)...)
}

// adminOK is admin for commands that must succeed: it returns their
// standard output.
func adminOK(t *testing.T, dbURL string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		out, errOut, code := admin(t, dbURL, args...)
		require.Equal(t, 0, code, "bourse admin %s: %s", strings.Join(args, " "), errOut)
		return out
	}
}

// TestAdminGrant is docs/operations.md's new deployment: a grant repeated
// with its key grants once, with or without its memo, and a grant of
// another amount under the key says what the key did. Amounts print at
// the currency's scale (the SQL ledger reads them with 18 places).
func TestAdminGrant(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ok := adminOK(t, dbURL)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "acme", "--currency", "CRED")
	ok("open", "alice", "--currency", "CRED", "--parent", "acme")
	first := ok("grant", "alice", "500", "--currency", "CRED", "--key", "grant-2026-11-alice", "--memo", "November allocation")
	assert.Equal(t, "granted 500.00 CRED to alice; available 500.00, held 0.00\n", first, "amounts at CRED's scale")

	again := ok("grant", "alice", "500", "--currency", "CRED", "--key", "grant-2026-11-alice")
	assert.Equal(t, first, again, "the first result, without the memo")
	assert.Equal(t, first, ok("grant", "alice", "500.00", "--currency", "CRED", "--key", "grant-2026-11-alice", "--memo", "another note"))

	_, errOut, code := admin(t, dbURL, "grant", "alice", "600", "--currency", "CRED", "--key", "grant-2026-11-alice")
	assert.Equal(t, exitRefused, code)
	assert.Regexp(t, `idempotency_conflict: key: key "grant-2026-11-alice" was used by \S+ at .* for "grant 500 CRED to alice"`, errOut, "says what the key did")
	_, errOut, code = admin(t, dbURL, "grant", "acme", "500", "--currency", "CRED", "--key", "grant-2026-11-alice")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "idempotency_conflict: key: ")

	assert.Equal(t, "wallet/CRED/alice: available 500.00 CRED, held 0.00\n", ok("balance", "wallet/CRED/alice"))
	assert.Regexp(t, ` 500\.00 +500\.00 +issuance/CRED +grant-2026-11-alice`, ok("statement", "wallet/CRED/alice"))

	// A grant before the wallet is open says to open it.
	_, errOut, code = admin(t, dbURL, "grant", "bob", "5", "--currency", "CRED", "--key", "grant-bob")
	assert.Equal(t, exitRefused, code)
	assert.Contains(t, errOut, "no account wallet/CRED/bob; open the wallet first: bourse admin open bob --currency CRED")
}
