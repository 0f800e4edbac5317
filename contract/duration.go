package contract

import (
	"encoding/json"
	"fmt"
	"time"
)

// Duration is a time.Duration written in JSON as a string with units
// ("1m30s", "250ms"), as everywhere in the wire protocol.
type Duration time.Duration

// MarshalJSON writes the duration's String quoted: its characters (digits,
// '.', '-', the units, 'µ' in UTF-8) need no escaping in JSON.
func (d Duration) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = append(b, time.Duration(d).String()...)
	return append(b, '"'), nil
}

func (d *Duration) UnmarshalJSON(b []byte) error {
	s, ok := plainString(b)
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("duration must be a string with units, like \"90s\"")
		}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// plainString is the text of a JSON string of printable ASCII without
// escapes, which is every duration a party writes; the rest (escapes,
// UTF-8, anything not a string) goes through encoding/json.
func plainString(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	for _, c := range b[1 : len(b)-1] {
		if c < ' ' || c > '~' || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(b[1 : len(b)-1]), true
}
