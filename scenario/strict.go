package scenario

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// LineError is a mistake in a scenario file: where, which field, what.
type LineError struct {
	File string
	Line int
	Path string // the field, as servers[1].policy.k; empty for the document
	Err  error
}

func (e *LineError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(":")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d: ", e.Line)
	} else if e.File != "" {
		b.WriteString(" ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *LineError) Unwrap() error { return e.Err }

// fieldError is a mistake found after decoding, at a field path; Parse
// finds its line.
type fieldError struct {
	path string
	err  error
}

func (e *fieldError) Error() string { return e.path + ": " + e.err.Error() }
func (e *fieldError) Unwrap() error { return e.err }

func fieldErr(path, format string, args ...any) error {
	return &fieldError{path: path, err: fmt.Errorf(format, args...)}
}

// strict checks that every key of a mapping in n names a field of the Go
// type t (by its yaml tag), all the way down, so that a misspelt key is
// an error with its line rather than a setting silently ignored. Types
// that decode themselves (yaml.Unmarshaler) check their own keys.
func strict(n *yaml.Node, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		return strict(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode {
		return strict(n.Alias, t, path)
	}
	if as, ok := reflect.New(t).Interface().(interface{ strictAs() reflect.Type }); ok {
		if n.Kind != yaml.MappingNode {
			return nil // a scalar: the name of a policy or a strategy
		}
		return strict(n, as.strictAs(), path)
	}
	if t == nodeType {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return scalar(n, t, path) // it decodes itself: a decimal, say
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return scalar(n, t, path)
		}
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fields[k.Value]
			if !ok {
				return &LineError{Line: k.Line, Path: join(path, k.Value), Err: fmt.Errorf("no such field%s", suggest(k.Value, fields))}
			}
			if err := strict(v, f, join(path, k.Value)); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind != yaml.SequenceNode {
			return scalar(n, t, path)
		}
		for i, v := range n.Content {
			if err := strict(v, t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return scalar(n, t, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			at := join(path, n.Content[i].Value)
			if err := scalar(n.Content[i], t.Key(), at); err != nil {
				return err
			}
			if err := strict(n.Content[i+1], t.Elem(), at); err != nil {
				return err
			}
		}
	default:
		return scalar(n, t, path)
	}
	return nil
}

var (
	unmarshaler     = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
)

func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") {
			for k, v := range yamlFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	return out
}

func suggest(key string, fields map[string]reflect.Type) string {
	var names []string
	for k := range fields {
		names = append(names, k)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (want one of " + strings.Join(names, ", ") + ")"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// lineOf finds the line of a field path (a.b[2].c) in a document, or of
// the closest field above it that exists.
func lineOf(root *yaml.Node, path string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, part := range splitPath(path) {
		next := (*yaml.Node)(nil)
		switch {
		case part.index >= 0 && n.Kind == yaml.SequenceNode && part.index < len(n.Content):
			next = n.Content[part.index]
		case part.index < 0 && n.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == part.key {
					line = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		if part.index >= 0 {
			line = n.Line
		}
	}
	return line
}

type pathPart struct {
	key   string
	index int // -1 for a key
}

func splitPath(path string) []pathPart {
	var out []pathPart
	for _, seg := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(seg, "[")
		if key != "" {
			out = append(out, pathPart{key: key, index: -1})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				break
			}
			out = append(out, pathPart{index: i})
			_, rest, _ = strings.Cut(after, "[")
		}
	}
	return out
}

// located gives an error found after decoding the line of its field.
func located(file string, root *yaml.Node, err error) error {
	if err == nil {
		return nil
	}
	var le *LineError
	if errors.As(err, &le) {
		if le.File == "" {
			le.File = file
		}
		return le
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return &LineError{File: file, Line: lineOf(root, fe.path), Path: fe.path, Err: fe.err}
	}
	return &LineError{File: file, Err: err}
}
