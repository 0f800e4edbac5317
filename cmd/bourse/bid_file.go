package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bourse/bourse/contract"
)

// readTerms reads an offer's terms from a JSON or YAML file. YAML is
// turned into JSON and read by contract.ParseTerms, so both are held to
// the same strict rules (no unknown or duplicate keys, no nulls). A file
// that cannot be read so is a command line that cannot be right (-f names
// it): a usage error.
func readTerms(path string) (contract.Terms, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return contract.Terms{}, usagef("-f: read the terms: %w", err)
	}
	ext := strings.ToLower(filepath.Ext(path))
	if ext == ".yaml" || ext == ".yml" || (ext != ".json" && !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{"))) {
		if data, err = yamlToJSON(data); err != nil {
			return contract.Terms{}, usagef("-f %s: %w", path, err)
		}
	}
	t, err := contract.ParseTerms(data)
	if err != nil {
		return contract.Terms{}, usagef("-f %s: %w", path, err)
	}
	return t, nil
}

// integerKeys are the fields of an offer that are JSON numbers; every other
// scalar is a string (amounts, durations), so a bare YAML number such as
// `prepayment: 12.50` keeps its exact text instead of passing through a
// float.
var integerKeys = map[string]bool{"gpus": true, "min_memory_mib": true}

func yamlToJSON(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	if doc.Kind == 0 {
		return nil, fmt.Errorf("empty")
	}
	var b bytes.Buffer
	if err := writeJSON(&b, &doc, "", 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeJSON writes n as JSON. key is the mapping key n is the value of. Keys
// are written in order and duplicates kept, for ParseTerms to refuse.
func writeJSON(b *bytes.Buffer, n *yaml.Node, key string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("nested too deeply")
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return fmt.Errorf("want one YAML document")
		}
		return writeJSON(b, n.Content[0], key, depth+1)
	case yaml.AliasNode:
		return writeJSON(b, n.Alias, key, depth+1)
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: a key must be a plain name", k.Line)
			}
			kb, _ := json.Marshal(k.Value)
			b.Write(kb)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1], k.Value, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c, key, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			b.WriteString("null")
		case "!!bool":
			var v bool
			if err := n.Decode(&v); err != nil {
				return fmt.Errorf("line %d: %w", n.Line, err)
			}
			fmt.Fprint(b, v)
		case "!!int":
			if integerKeys[key] {
				var v int64
				if err := n.Decode(&v); err != nil {
					return fmt.Errorf("line %d: %w", n.Line, err)
				}
				fmt.Fprint(b, v)
				return nil
			}
			fallthrough
		default:
			vb, _ := json.Marshal(n.Value)
			b.Write(vb)
		}
	default:
		return fmt.Errorf("line %d: unexpected YAML", n.Line)
	}
	return nil
}
