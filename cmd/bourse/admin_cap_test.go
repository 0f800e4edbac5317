package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/internal/pgtest"
)

// TestAdminCap sets, raises and lowers a client's concurrent-GPU cap on
// PostgreSQL, each change once under its key.
func TestAdminCap(t *testing.T) {
	db := pgtest.FreshDB(t)
	ok := adminOK(t, db)
	assert.Equal(t, "ada may hold 3 GPUs at once; 0 in use\n", ok("cap", "ada", "3", "--key", "cap-ada-1"))
	assert.Equal(t, "ada may hold 3 GPUs at once; 0 in use\n", ok("cap", "ada", "3", "--key", "cap-ada-1"), "the same again")
	assert.Equal(t, "ada may hold 8 GPUs at once; 0 in use\n", ok("cap", "ada", "8", "--key", "cap-ada-2"))
	assert.Equal(t, "ada may hold 1 GPUs at once; 0 in use\n", ok("cap", "ada", "1", "--key", "cap-ada-3"))
	assert.Contains(t, ok("balance", "wallet/GPU-CAP/ada"), "1")

	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cap", "ada", "2"}, exitUsage, "--key is required"},
		{[]string{"cap", "ada", "two", "--key", "k"}, exitFailure, "want a whole number of GPUs"},
		{[]string{"cap", "ada", "2", "--key", "cap-ada-2"}, exitRefused, "idempotency_conflict"},
	} {
		_, errOut, code := admin(t, db, tt.args...)
		assert.Equal(t, tt.code, code, "%v", tt.args)
		assert.Contains(t, errOut, tt.want)
	}
}
