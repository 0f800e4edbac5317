package contract

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/bourse/bourse"
)

// encoding/json matches keys case-insensitively (even "ſerver" for
// "server"), keeps the last of duplicate keys and reads null into anything
// as "leave unchanged". In an offer each of these lets two parsers disagree
// about what a client agreed to pay, so checkStrict scans the bytes first
// and refuses them.

// objectKeys lists the exact keys of each object in an offer, by path.
// Objects not listed (job.env) are maps and may have any key.
var objectKeys = map[string][]string{
	"":            {"client", "currency", "gpus", "class", "time_limit", "prepayment", "p", "q", "preemptible", "server", "job", "start_at"},
	"class":       {"model", "min_memory_mib"},
	"job":         {"image", "command", "args", "env", "files", "profile"},
	"job.files":   {"digest", "bytes"},
	"job.profile": {"utilization", "duration"},
}

// maxDepth is deeper than any offer nests (p[0] is at depth 3).
const maxDepth = 8

// checkStrict refuses, naming the field, what encoding/json would let
// through: a top level other than one object, trailing data, duplicate or
// inexact keys, nulls, and deep nesting. It scans the bytes itself, in one
// pass without allocating per token: every offer and every message that
// carries terms goes through it, and encoding/json's Token API cost more
// than the decoding proper. FuzzStrict holds it to the token walker it
// replaced.
func checkStrict(op string, data []byte) error {
	s := scanner{op: op, data: data}
	s.ws()
	if s.i >= len(data) {
		return s.truncated()
	}
	switch c := data[s.i]; {
	case c == '{':
	case c == '[' || c == '"' || c == '-' || (c >= '0' && c <= '9'):
		return fail(bourse.EInvalid, op, "", "want a JSON object")
	case c == 't' || c == 'f' || c == 'n':
		if s.literal() != nil {
			return s.syntax()
		}
		return fail(bourse.EInvalid, op, "", "want a JSON object")
	default:
		return s.syntax()
	}
	s.i++
	if err := s.object(1); err != nil {
		return err
	}
	s.ws()
	if s.i != len(data) {
		return fail(bourse.EInvalid, op, "", "trailing data after the object")
	}
	return nil
}

type scanner struct {
	op   string
	data []byte
	i    int
	// at is where the value being read is, a step per level below the top
	// object: the field name errors give (class.model, p[0].x) is built
	// from it only when one is needed.
	at [maxDepth + 1]step
	n  int // steps in at
}

// step is an object's member (its key, escapes decoded) or an array's
// element (its index).
type step struct {
	key    []byte
	member bool
	index  int
}

// field names the value being read: keys joined by dots, indexes in
// brackets.
func (s *scanner) field() string {
	var buf [64]byte
	return string(s.appendField(buf[:0]))
}

func (s *scanner) appendField(b []byte) []byte {
	for _, st := range s.at[:s.n] {
		if !st.member {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(st.index), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, st.key...)
	}
	return b
}

func (s *scanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object reads the members of an object whose '{' is read, and its '}'.
func (s *scanner) object(depth int) error {
	var buf [32]byte
	keys, closed := objectKeys[string(s.appendField(buf[:0]))]
	var seenKeys uint64 // of a closed object, by index in keys
	var seen [][]byte   // of an open one (job.env)
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		key, err := s.key()
		if err != nil {
			return err
		}
		s.at[s.n] = step{key: key, member: true}
		s.n++
		if closed {
			k := slices.IndexFunc(keys, func(k string) bool { return k == string(key) })
			if k < 0 {
				return fail(bourse.EInvalid, s.op, s.field(), "unknown field (names are exact and snake_case)")
			}
			if seenKeys&(1<<k) != 0 {
				return fail(bourse.EInvalid, s.op, s.field(), "duplicate key")
			}
			seenKeys |= 1 << k
		} else {
			if slices.ContainsFunc(seen, func(k []byte) bool { return string(k) == string(key) }) {
				return fail(bourse.EInvalid, s.op, s.field(), "duplicate key")
			}
			seen = append(seen, key)
		}
		s.ws()
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := s.value(depth); err != nil {
			return err
		}
		s.n--
		s.ws()
		if s.i >= len(s.data) {
			return s.truncated()
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.syntax()
		}
	}
}

// array reads the elements of an array whose '[' is read, and its ']'.
func (s *scanner) array(depth int) error {
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return nil
	}
	for n := 0; ; n++ {
		s.at[s.n] = step{index: n}
		s.n++
		if err := s.value(depth); err != nil {
			return err
		}
		s.n--
		s.ws()
		if s.i >= len(s.data) {
			return s.truncated()
		}
		switch s.data[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return s.syntax()
		}
	}
}

func (s *scanner) value(depth int) error {
	s.ws()
	if s.i >= len(s.data) {
		return s.truncated()
	}
	switch c := s.data[s.i]; {
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return fail(bourse.EInvalid, s.op, s.field(), "nested deeper than %d", maxDepth)
		}
		s.i++
		if c == '{' {
			return s.object(depth + 1)
		}
		return s.array(depth + 1)
	case c == '"':
		_, err := s.str()
		return err
	case c == 'n':
		if err := s.literal(); err != nil {
			return err
		}
		return fail(bourse.EInvalid, s.op, s.field(), "null is not allowed; leave the field out")
	case c == 't' || c == 'f':
		return s.literal()
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return s.syntax()
}

// key reads an object key and returns it as encoding/json reads it:
// escapes decoded, invalid UTF-8 replaced.
func (s *scanner) key() ([]byte, error) {
	if s.i >= len(s.data) {
		return nil, s.truncated()
	}
	if s.data[s.i] != '"' {
		return nil, s.syntax()
	}
	raw, err := s.str()
	if err != nil {
		return nil, err
	}
	k, ok := unquote(raw)
	if !ok {
		return nil, s.syntax()
	}
	return k, nil
}

// unquote decodes a JSON string, raw with its quotes, as encoding/json
// does: escapes decoded, invalid UTF-8 replaced. Most strings of an offer
// have neither and come back as they are, without a copy.
func unquote(raw []byte) ([]byte, bool) {
	body := raw[1 : len(raw)-1]
	if !slices.Contains(body, '\\') && utf8.Valid(body) {
		return body, true
	}
	var k string
	if err := json.Unmarshal(raw, &k); err != nil {
		return nil, false
	}
	return []byte(k), true
}

// str reads a string whose opening quote is at s.i and returns its raw
// bytes, quotes included.
func (s *scanner) str() ([]byte, error) {
	start := s.i
	s.i++
	for s.i < len(s.data) {
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return s.data[start:s.i], nil
		case c < 0x20:
			return nil, s.syntax()
		case c == '\\':
			s.i++
			if s.i >= len(s.data) {
				return nil, s.truncated()
			}
			switch s.data[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.data) {
						return nil, s.truncated()
					}
					if !isHex(s.data[s.i]) {
						return nil, s.syntax()
					}
					s.i++
				}
			default:
				return nil, s.syntax()
			}
		default:
			s.i++
		}
	}
	return nil, s.truncated()
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.data[s.i] == '-' {
		s.i++
	}
	if s.i >= len(s.data) {
		return s.truncated()
	}
	switch c := s.data[s.i]; {
	case c == '0':
		s.i++
	case c >= '1' && c <= '9':
		s.digits()
	default:
		return s.syntax()
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.endOrSyntax()
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.endOrSyntax()
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// literal reads true, false or null.
func (s *scanner) literal() error {
	for _, lit := range []string{"true", "false", "null"} {
		if lit[0] != s.data[s.i] {
			continue
		}
		for j := 0; j < len(lit); j++ {
			if s.i+j >= len(s.data) {
				return s.truncated()
			}
			if s.data[s.i+j] != lit[j] {
				return s.syntax()
			}
		}
		s.i += len(lit)
		return nil
	}
	return s.syntax()
}

func (s *scanner) expect(c byte) error {
	if s.i >= len(s.data) {
		return s.truncated()
	}
	if s.data[s.i] != c {
		return s.syntax()
	}
	s.i++
	return nil
}

func (s *scanner) endOrSyntax() error {
	if s.i >= len(s.data) {
		return s.truncated()
	}
	return s.syntax()
}

func (s *scanner) truncated() error {
	return fail(bourse.EInvalid, s.op, "", "truncated JSON")
}

func (s *scanner) syntax() error {
	return fail(bourse.EInvalid, s.op, "", "malformed JSON at byte %d", s.i)
}
