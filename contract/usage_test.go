package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
)

// TestUsageCheck: every number a server reports is held to the limits of
// an offer's numbers, so that usage that passes can always be priced.
func TestUsageCheck(t *testing.T) {
	seventy := "0." + strings.Repeat("0", 69) + "1" // 70 places
	ok := Usage{U: decimal.RequireFromString("12.5"), T: time.Minute, S: decimal.RequireFromString("1")}
	require.NoError(t, ok.Check("test"))
	for _, c := range []struct {
		name, field string
		u           Usage
	}{
		{"SeventyPlaces", "u", Usage{U: decimal.RequireFromString(seventy), T: time.Second}},
		{"HugeExponent", "u", Usage{U: decimal.RequireFromString("1e65"), T: time.Second}},
		{"TinyShare", "s", Usage{S: decimal.RequireFromString("1e-70"), T: time.Second}},
		{"TooLarge", "u", Usage{U: decimal.RequireFromString("1000000000000000000"), T: time.Second}},
		{"NegativeU", "u", Usage{U: decimal.RequireFromString("-1"), T: time.Second}},
		{"NegativeS", "s", Usage{S: decimal.RequireFromString("-0.5"), T: time.Second}},
		{"NegativeT", "t", Usage{T: -time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.u.Check("test")
			var e *bourse.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, bourse.EInvalid, e.Code)
			assert.Equal(t, c.field, e.Field)
		})
	}
}

// FuzzUsageCheck: usage that passes Check settles valid terms without an
// error, whatever the numbers; that is what lets the exchange promise that
// a stored reading never locks an escrow.
func FuzzUsageCheck(f *testing.F) {
	f.Add("12.5", int64(time.Minute), "1")
	f.Add("1e65", int64(time.Second), "0")
	f.Add("0.5", int64(0), "1e-70")
	f.Add("999999999999999999.999999999999999999", int64(MaxTimeLimit), "3")
	terms := Terms{Client: "c", Currency: "CRED", GPUs: 2, TimeLimit: time.Hour,
		Prepayment: decimal.RequireFromString("100"), P: Flat(decimal.RequireFromString("0.01")),
		Q: Curve{{X: decimal.Zero, Y: decimal.Zero}, {X: decimal.RequireFromString("2"), Y: decimal.RequireFromString("0.003")}}}
	f.Fuzz(func(t *testing.T, u string, tt int64, s string) {
		du, err1 := decimal.NewFromString(u)
		ds, err2 := decimal.NewFromString(s)
		if err1 != nil || err2 != nil {
			return
		}
		usage := Usage{U: du, T: time.Duration(tt), S: ds}
		if usage.Check("fuzz") != nil {
			return
		}
		st, err := Charge(terms, usage, 2)
		if err != nil {
			t.Fatalf("usage %+v passed Check but Charge fails: %v", usage, err)
		}
		if st.Charge.IsNegative() || st.Charge.GreaterThan(terms.Prepayment) {
			t.Fatalf("charge %s outside 0..%s", st.Charge, terms.Prepayment)
		}
	})
}
