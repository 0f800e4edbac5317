package sqlledger

import (
	"testing"
	"testing/quick"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
)

// derive is UUID version 5, as github.com/google/uuid computes it: stored
// keys depend on it.
func TestDerive(t *testing.T) {
	assert.Equal(t, namespace, uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://github.com/bourse/bourse/currency/sqlledger")))
	same := func(prefix, id string) bool {
		return derive(prefix, id) == uid(uuid.NewSHA1(namespace, []byte(prefix+id)))
	}
	assert.True(t, same("account:", "wallet/GPU/alice"))
	assert.True(t, same("result:", ""))
	long := make([]byte, 300)
	assert.True(t, same("movement:", string(long)), "longer than the stack buffer")
	assert.NoError(t, quick.Check(same, nil))
	// A stored key, pinned.
	assert.Equal(t, "dfd249c8-88c6-5620-b9d3-62b7af73eee7", uuid.UUID(accountUID("revenue/GPU/srv")).String())
}

func TestParseDec(t *testing.T) {
	for in, want := range map[string]string{
		"12.340000000000000000":  "12.34",
		"100.000000000000000000": "100",
		"0.000000000000000000":   "0",
		"-5.500000000000000000":  "-5.5",
		"1000":                   "1000",
		"0.000000000000000001":   "0.000000000000000001",
	} {
		d, err := parseDec(in)
		assert.NoError(t, err, in)
		assert.Equal(t, want, d.String(), in)
		assert.True(t, d.Equal(decimal.RequireFromString(in)), in)
	}
	_, err := parseDec("x")
	assert.Error(t, err)
}

// Times keep their nanoseconds through splitTime and joinTime.
func TestSplitTime(t *testing.T) {
	f := func(sec int64, nsec uint32) bool {
		in := time.Unix(sec%(1<<40), int64(nsec%1e9)).UTC()
		at, ns := splitTime(in)
		return at.Nanosecond()%1000 == 0 && joinTime(at, ns).Equal(in)
	}
	assert.NoError(t, quick.Check(f, nil))
}
