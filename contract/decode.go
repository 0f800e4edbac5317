package contract

import (
	"encoding/json"
	"reflect"
	"strconv"
)

// decodeWire reads terms that checkStrict has passed into their wire form,
// as encoding/json would: the same values, and the same first type error
// (a string where an integer belongs, say), which it returns as
// encoding/json's *json.UnmarshalTypeError for decodeError to word. It
// walks the bytes itself because terms are read at every hop of a contract
// (client, exchange, each server, the start, each event) and
// encoding/json's reflection cost several times the walk; FuzzDecodeWire
// holds it to encoding/json. Input checkStrict has not passed is outside
// its contract.
func decodeWire(data []byte) (termsJSON, error) {
	d := wireDecoder{scanner: scanner{data: data}}
	var w termsJSON
	d.ws()
	d.i++ // '{'
	d.object(func(key []byte) {
		switch string(key) {
		case "client":
			d.string("client", &w.Client)
		case "currency":
			d.string("currency", &w.Currency)
		case "gpus":
			d.int("gpus", &w.GPUs)
		case "class":
			d.class(&w.Class)
		case "time_limit":
			w.TimeLimit = d.stringPtr("time_limit")
		case "prepayment":
			w.Prepayment = d.stringPtr("prepayment")
		case "p":
			w.P = d.pairs("p")
		case "q":
			w.Q = d.pairs("q")
		case "preemptible":
			d.bool("preemptible", &w.Preemptible)
		case "server":
			d.string("server", &w.Server)
		case "job":
			d.job(&w.Job)
		case "start_at":
			w.StartAt = d.stringPtr("start_at")
		default: // checkStrict refused any other key
			d.skip()
		}
	})
	return w, d.err
}

// wireDecoder walks well-formed JSON, keeping the first type error and
// reading on past it, as encoding/json does.
type wireDecoder struct {
	scanner
	err error
}

// object calls member for each key of an object whose '{' is read, with
// the decoder at the key's value, and reads the '}'.
func (d *wireDecoder) object(member func(key []byte)) {
	d.ws()
	if d.data[d.i] == '}' {
		d.i++
		return
	}
	for {
		d.ws()
		key, _ := d.key() // checkStrict has read every key
		d.ws()
		d.i++ // ':'
		d.ws()
		member(key)
		d.ws()
		c := d.data[d.i]
		d.i++
		if c == '}' {
			return
		}
	}
}

// array calls elem for each element of an array whose '[' is read, with
// the decoder at the element, and reads the ']'.
func (d *wireDecoder) array(elem func()) {
	d.ws()
	if d.data[d.i] == ']' {
		d.i++
		return
	}
	for {
		d.ws()
		elem()
		d.ws()
		c := d.data[d.i]
		d.i++
		if c == ']' {
			return
		}
	}
}

// is reports whether the value at the decoder starts with c; if not, it
// records the type error encoding/json would (the JSON value's kind, the Go
// type wanted, the field) and skips the value.
func (d *wireDecoder) is(c byte, field string, want reflect.Type) bool {
	if d.data[d.i] == c {
		return true
	}
	d.mismatch(field, want, d.kind())
	d.skip()
	return false
}

func (d *wireDecoder) mismatch(field string, want reflect.Type, got string) {
	if d.err == nil {
		d.err = &json.UnmarshalTypeError{Value: got, Type: want, Field: field}
	}
}

// kind names the JSON value at the decoder as encoding/json's type errors do.
func (d *wireDecoder) kind() string {
	switch d.data[d.i] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

var (
	stringType    = reflect.TypeFor[string]()
	stringPtrType = reflect.TypeFor[*string]()
	intType       = reflect.TypeFor[int]()
	int64Type     = reflect.TypeFor[int64]()
	boolType      = reflect.TypeFor[bool]()
)

func (d *wireDecoder) string(field string, v *string) {
	d.stringAs(field, stringType, v)
}

func (d *wireDecoder) stringPtr(field string) *string {
	var s string
	if !d.stringAs(field, stringPtrType, &s) {
		return nil
	}
	return &s
}

func (d *wireDecoder) stringAs(field string, want reflect.Type, v *string) bool {
	if !d.is('"', field, want) {
		return false
	}
	raw, _ := d.str()
	body, _ := unquote(raw) // checkStrict has read the string
	*v = string(body)
	return true
}

func (d *wireDecoder) int(field string, v *int) {
	if n, ok := d.integer(field, intType); ok {
		*v = int(n)
	}
}

func (d *wireDecoder) int64(field string, v *int64) {
	if n, ok := d.integer(field, int64Type); ok {
		*v = n
	}
}

// integer reads an integer that fits typ, int or int64.
func (d *wireDecoder) integer(field string, typ reflect.Type) (int64, bool) {
	c := d.data[d.i]
	if c != '-' && (c < '0' || c > '9') {
		d.mismatch(field, typ, d.kind())
		d.skip()
		return 0, false
	}
	start := d.i
	_ = d.number()
	lit := string(d.data[start:d.i])
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil || (typ == intType && int64(int(n)) != n) {
		d.mismatch(field, typ, "number "+lit)
		return 0, false
	}
	return n, true
}

func (d *wireDecoder) bool(field string, v *bool) {
	c := d.data[d.i]
	if c != 't' && c != 'f' {
		d.mismatch(field, boolType, d.kind())
		d.skip()
		return
	}
	_ = d.literal()
	*v = c == 't'
}

func (d *wireDecoder) class(v **classJSON) {
	if !d.is('{', "class", reflect.TypeFor[*classJSON]()) {
		return
	}
	d.i++
	c := new(classJSON)
	*v = c
	d.object(func(key []byte) {
		switch string(key) {
		case "model":
			d.string("class.model", &c.Model)
		case "min_memory_mib":
			d.int("class.min_memory_mib", &c.MinMemoryMiB)
		default:
			d.skip()
		}
	})
}

// pairs reads a curve: an array of arrays of strings.
func (d *wireDecoder) pairs(field string) [][]string {
	if !d.is('[', field, reflect.TypeFor[[][]string]()) {
		return nil
	}
	d.i++
	out := [][]string{}
	d.array(func() {
		var pair []string
		if d.is('[', field, reflect.TypeFor[[]string]()) {
			d.i++
			pair = d.strings(field)
		}
		out = append(out, pair)
	})
	return out
}

// strings reads the elements of an array of strings whose '[' is read.
func (d *wireDecoder) strings(field string) []string {
	out := []string{}
	d.array(func() {
		var s string
		d.string(field, &s)
		out = append(out, s)
	})
	return out
}

func (d *wireDecoder) job(v **jobJSON) {
	if !d.is('{', "job", reflect.TypeFor[*jobJSON]()) {
		return
	}
	d.i++
	j := new(jobJSON)
	*v = j
	d.object(func(key []byte) {
		switch string(key) {
		case "image":
			d.string("job.image", &j.Image)
		case "command":
			d.string("job.command", &j.Command)
		case "args":
			if d.is('[', "job.args", reflect.TypeFor[[]string]()) {
				d.i++
				j.Args = d.strings("job.args")
			}
		case "env":
			if d.is('{', "job.env", reflect.TypeFor[map[string]string]()) {
				d.i++
				j.Env = map[string]string{}
				d.object(func(name []byte) {
					var s string
					d.string("job.env", &s)
					j.Env[string(name)] = s
				})
			}
		case "files":
			d.files(&j.Files)
		case "profile":
			d.profile(&j.Profile)
		default:
			d.skip()
		}
	})
}

func (d *wireDecoder) files(v **filesJSON) {
	if !d.is('{', "job.files", reflect.TypeFor[*filesJSON]()) {
		return
	}
	d.i++
	f := new(filesJSON)
	*v = f
	d.object(func(key []byte) {
		switch string(key) {
		case "digest":
			d.string("job.files.digest", &f.Digest)
		case "bytes":
			d.int64("job.files.bytes", &f.Bytes)
		default:
			d.skip()
		}
	})
}

func (d *wireDecoder) profile(v **profileJSON) {
	if !d.is('{', "job.profile", reflect.TypeFor[*profileJSON]()) {
		return
	}
	d.i++
	p := new(profileJSON)
	*v = p
	d.object(func(key []byte) {
		switch string(key) {
		case "utilization":
			p.Utilization = d.stringPtr("job.profile.utilization")
		case "duration":
			p.Duration = d.stringPtr("job.profile.duration")
		default:
			d.skip()
		}
	})
}

// skip reads past one well-formed value.
func (d *wireDecoder) skip() {
	switch d.data[d.i] {
	case '"':
		_, _ = d.str()
	case '{':
		d.i++
		d.object(func([]byte) { d.skip() })
	case '[':
		d.i++
		d.array(d.skip)
	case 't', 'f', 'n':
		_ = d.literal()
	default:
		_ = d.number()
	}
}
