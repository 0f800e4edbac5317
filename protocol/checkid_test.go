package protocol

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCheckIDAsTheRule: CheckID's loop says what the rule it replaced said,
// a regular expression and no dot, on ids made of every character that
// matters, at every length around the limit.
func TestCheckIDAsTheRule(t *testing.T) {
	rule := regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9_.@-]{0,63}$`)
	valid := func(id string) bool { return rule.MatchString(id) && !strings.Contains(id, ".") }
	alphabet := []byte("aZ09_-@.. */>é\x00")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		b := make([]byte, rng.IntN(67))
		for i := range b {
			if rng.IntN(4) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			} else {
				b[i] = "abcXYZ789_-"[rng.IntN(11)]
			}
		}
		id := string(b)
		assert.Equal(t, valid(id), CheckID(id) == nil, "%q", id)
	}
	for _, id := range []string{"", "a", "@a", "a@b", strings.Repeat("a", 64), strings.Repeat("a", 65), "a.b", "-x", "c-93af3d"} {
		assert.Equal(t, valid(id), CheckID(id) == nil, "%q", id)
	}
}
