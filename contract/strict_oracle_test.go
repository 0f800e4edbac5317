package contract

// The token walker that checkStrict replaced, kept as the oracle that
// FuzzStrict compares the byte scanner with.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/bourse/bourse"
)

type walker struct {
	op  string
	dec *json.Decoder
}

// checkStrict refuses, naming the field, what encoding/json would let
// through: a top level other than one object, trailing data, duplicate or
// inexact keys, nulls, and deep nesting.
func checkStrictOracle(op string, data []byte) error {
	w := walker{op: op, dec: json.NewDecoder(bytes.NewReader(data))}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(err)
	}
	if tok != json.Delim('{') {
		return fail(bourse.EInvalid, op, "", "want a JSON object")
	}
	if err := w.object("", 1); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return fail(bourse.EInvalid, op, "", "trailing data after the object")
	}
	return nil
}

func (w *walker) value(path string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(err)
	}
	switch tok {
	case nil:
		return fail(bourse.EInvalid, w.op, path, "null is not allowed; leave the field out")
	case json.Delim('{'), json.Delim('['):
		if depth >= maxDepth {
			return fail(bourse.EInvalid, w.op, path, "nested deeper than %d", maxDepth)
		}
		if tok == json.Delim('{') {
			return w.object(path, depth+1)
		}
		return w.array(path, depth+1)
	}
	return nil
}

// object reads the members of an object whose '{' is read, and its '}'.
func (w *walker) object(path string, depth int) error {
	keys, closed := objectKeys[path]
	seen := make(map[string]bool)
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntax(err)
		}
		key, _ := tok.(string) // Token yields only strings as keys
		field := key
		if path != "" {
			field = path + "." + key
		}
		if seen[key] {
			return fail(bourse.EInvalid, w.op, field, "duplicate key")
		}
		seen[key] = true
		if closed && !slices.Contains(keys, key) {
			return fail(bourse.EInvalid, w.op, field, "unknown field (names are exact and snake_case)")
		}
		if err := w.value(field, depth); err != nil {
			return err
		}
	}
	return w.end()
}

// array reads the elements of an array whose '[' is read, and its ']'.
func (w *walker) array(path string, depth int) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(fmt.Sprintf("%s[%d]", path, i), depth); err != nil {
			return err
		}
	}
	return w.end()
}

func (w *walker) end() error {
	if _, err := w.dec.Token(); err != nil {
		return w.syntax(err)
	}
	return nil
}

func (w *walker) syntax(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fail(bourse.EInvalid, w.op, "", "truncated JSON")
	}
	return fail(bourse.EInvalid, w.op, "", "malformed JSON at byte %d: %v", w.dec.InputOffset(), err)
}
