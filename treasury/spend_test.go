package treasury_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/treasury"
)

// TestUsedPercent: the share of a spend cap used, in whole percent, as
// bourse admin spend-caps and the console's caps page show it.
func TestUsedPercent(t *testing.T) {
	for _, c := range []struct{ used, limit, want string }{
		{"0", "150", "0"},
		{"75", "150", "50"},
		{"1", "3", "33"},
		{"2", "3", "67"}, // rounded, half away from zero
		{"200", "150", "133"},
		{"5", "0", "0"}, // no limit
	} {
		u := treasury.SpendUse{Used: dectest.D(c.used)}
		u.Limit = dectest.D(c.limit)
		assert.Equal(t, c.want, u.UsedPercent().String(), "%s of %s", c.used, c.limit)
	}
}
