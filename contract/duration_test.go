package contract_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
)

// durationStd is Duration's decoding as it was, all through encoding/json:
// the oracle of the fast path.
func durationStd(b []byte) (contract.Duration, error) {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return 0, fmt.Errorf("duration must be a string with units, like \"90s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return contract.Duration(v), nil
}

// FuzzDuration holds Duration's JSON to encoding/json's: the same value
// or the same error for any input, and what it writes reads back.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{`"1ms"`, `"1m30s"`, `"-1.5h"`, `"250µs"`, `"250\u00b5s"`, `"2\u0068"`, `90`, `"90"`,
		`"1ms`, `""`, `"\"1s"`, `null`, `"1s" `, ` "1s"`, `"1\x00s"`, `"１s"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := durationStd(b)
		var got contract.Duration
		err := got.UnmarshalJSON(b)
		if wantErr != nil {
			require.EqualError(t, err, wantErr.Error())
			return
		}
		require.NoError(t, err)
		require.Equal(t, want, got)
		out, err := got.MarshalJSON()
		require.NoError(t, err)
		std, err := json.Marshal(time.Duration(got).String())
		require.NoError(t, err)
		require.Equal(t, string(std), string(out), "the bytes encoding/json writes")
		var back contract.Duration
		require.NoError(t, back.UnmarshalJSON(out))
		require.Equal(t, got, back)
	})
}
