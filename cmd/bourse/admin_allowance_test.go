package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/internal/pgtest"
	"github.com/bourse/bourse/treasury"
)

// TestAdminAllowance: a rules file's allowance paid from the command line
// on PostgreSQL, each period once however often the run is repeated.
func TestAdminAllowance(t *testing.T) {
	db := pgtest.FreshDB(t)
	ok := adminOK(t, db)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "ada", "--currency", "CRED")
	rules := filepath.Join(t.TempDir(), "allowances.yaml")
	require.NoError(t, os.WriteFile(rules, []byte(`allowances:
  - {wallet: ada, currency: CRED, a: "10", b: "0.1", period: 1h, start: 2026-01-01T00:00:00Z}
`), 0o644))

	out := ok("allowance", "run", "--rules", rules, "--now", "2026-01-01T03:30:00Z")
	assert.Regexp(t, `(?m)^wallet/CRED/ada +1 +9\.52 +allowance/wallet/CRED/ada/v1/1$`, out, "100·(1 − e^−0.1)")
	assert.Regexp(t, `(?m)^wallet/CRED/ada +3 `, out)
	assert.NotRegexp(t, `(?m)^wallet/CRED/ada +4 `, out, "period 4 has not ended")
	assert.Equal(t, "nothing due: every period that has ended is paid\n", ok("allowance", "run", "--rules", rules, "--now", "2026-01-01T03:59:00Z"))
	assert.Contains(t, ok("balance", "wallet/CRED/ada"), "25.92", "100·(1 − e^−0.3)")

	bad := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("allowances:\n  - {wallet: ada, currency: CRED, a: \"-1\", start: 2026-01-01T00:00:00Z}\n"), 0o644))
	_, errOut, code := bourseCmd("admin", "--db", "postgres://nobody@127.0.0.1:1/none", "allowance", "run", "--rules", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "allowances[0]")
	assert.Contains(t, errOut, "a is negative", "the rules are checked before the database is reached")
}

func TestAllowanceRulesOneAWallet(t *testing.T) {
	f := filepath.Join(t.TempDir(), "twice.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`allowances:
  - {wallet: ada, currency: CRED, a: "1", start: 2026-01-01T00:00:00Z}
  - {wallet: ada, currency: CRED, a: "2", start: 2026-01-01T00:00:00Z}
`), 0o644))
	_, err := readAllowances(f)
	assert.ErrorContains(t, err, "wallet/CRED/ada has an allowance already")
}

// TestAllowancesOneTruth: bourse admin allowance --help, the console
// (console.TestAllowancesSayWhenPaid) and docs/operations.md say alike
// when and where allowances are paid: every --schedule-every by each
// exchange, on the wallet's statement.
func TestAllowancesOneTruth(t *testing.T) {
	out := execute(t, nil, "admin", "allowance", "--help")
	assert.Contains(t, strings.Join(strings.Fields(out), " "), treasury.AllowancesPaid)
	doc := strings.Join(strings.Fields(readFile(t, "../../docs/operations.md")), " ")
	doc = strings.ReplaceAll(doc, "`", "")
	for _, s := range strings.Split(treasury.AllowancesPaid, ". ") {
		s = strings.ReplaceAll(strings.TrimSuffix(s, "."), `"`, "")
		s = strings.ReplaceAll(s, "Each period is paid once, under its own key, however many instances and runs there are", "")
		if s == "" {
			continue
		}
		assert.Contains(t, doc, s, "docs/operations.md")
	}
	assert.NotContains(t, out, "every minute")
}
