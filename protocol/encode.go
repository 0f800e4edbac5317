package protocol

import (
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	json "github.com/go-json-experiment/json/v1"
	"github.com/shopspring/decimal"

	"github.com/bourse/bourse/contract"
)

// marshalOptions encode as encoding/json does (its v1 options), with one
// marshaler of ours: decimals, every amount on the wire, written by
// contract.AppendDecimal instead of through math/big, in the same text.
var marshalOptions = jsonv2.JoinOptions(json.DefaultOptionsV1(),
	jsonv2.WithMarshalers(jsonv2.MarshalToFunc(func(enc *jsontext.Encoder, d decimal.Decimal) error {
		b := append(enc.AvailableBuffer(), '"')
		b = contract.AppendDecimal(b, d)
		return enc.WriteValue(append(b, '"'))
	})))

// Marshal encodes a message for the wire: the bytes encoding/json would
// write for it (FuzzUnmarshalOracle holds it to that).
func Marshal(v any) ([]byte, error) {
	return jsonv2.Marshal(v, marshalOptions)
}
