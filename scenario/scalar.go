package scenario

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gopkg.in/yaml.v3"
)

// scalar checks that node n decodes into the Go type t on its own, so
// that a value of the wrong type is an error naming its field and line
// ("workload.generator.durations.mean: "15 minutes" is not a duration")
// rather than the decoder's "cannot unmarshal !!str into time.Duration",
// which names neither. strict calls it where its walk reaches a value it
// does not go into.
func scalar(n *yaml.Node, t reflect.Type, path string) error {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		return &LineError{Line: n.Line, Path: path, Err: notA(n, t, err)}
	}
	return nil
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	decimalType  = reflect.TypeFor[decimal.Decimal]()
)

// notA says what a value should have been, in the words of the scenario
// files, keeping the decoder's own message for what it knows better.
func notA(n *yaml.Node, t reflect.Type, err error) error {
	var want string
	switch {
	case t == durationType:
		want = "a duration, like 90s, 20m or 1h30m"
	case t == decimalType:
		want = `a decimal number, like "0.0010" or "40000"`
	case n.Kind != yaml.ScalarNode:
		return fmt.Errorf("%s", decoderSays(err))
	}
	if want == "" {
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
			want = "a whole number"
		case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			want = "a whole number, 0 or more"
		case reflect.Float32, reflect.Float64:
			want = "a number"
		case reflect.Bool:
			want = "true or false"
		case reflect.Slice, reflect.Array:
			want = "a list"
		case reflect.Map, reflect.Struct:
			want = "a mapping of keys to values"
		default:
			return fmt.Errorf("%s", decoderSays(err))
		}
	}
	return fmt.Errorf("%q is not %s", n.Value, want)
}

// decoderSays is yaml's message without its heading and line, which the
// LineError gives.
func decoderSays(err error) string {
	s := strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n")
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "line "); ok {
		if _, after, ok := strings.Cut(rest, ": "); ok {
			return after
		}
	}
	return s
}
