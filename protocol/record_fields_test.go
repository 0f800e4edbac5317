package protocol_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// TestRecordSetsEveryField: the record TestAppendRecord and
// FuzzAppendRecord compare sets every field of a contract, nested parts
// included, so that a field added to contract.Contract and forgotten by
// the hand-written AppendRecord (or MarshalEvent) fails them rather than
// vanishing from the store's records.
func TestRecordSetsEveryField(t *testing.T) {
	var zero []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				zero = append(zero, path)
				return
			}
			walk(path, v.Elem())
			return
		case reflect.Struct:
			if v.Type() == reflect.TypeOf(decimal.Decimal{}) || v.Type().PkgPath() == "time" {
				if v.IsZero() {
					zero = append(zero, path)
				}
				return
			}
			for i := range v.NumField() {
				f := v.Type().Field(i)
				if !f.IsExported() || f.Tag.Get("json") == "-" {
					continue
				}
				walk(path+"."+f.Name, v.Field(i))
			}
			return
		}
		if v.IsZero() || (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
			zero = append(zero, path)
		}
	}
	walk("Contract", reflect.ValueOf(recordWith("x", 1, []byte("b"), 1, 3600)))
	if len(zero) > 0 {
		t.Fatalf("recordWith leaves these fields zero; set them, and see that AppendRecord and MarshalEvent write them:\n%s", strings.Join(zero, "\n"))
	}
}
