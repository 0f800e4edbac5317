package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	json "github.com/go-json-experiment/json/v1"

	"github.com/bourse/bourse"
)

// VerbReadings is where a server publishes its readings of an interval,
// all its running contracts' in one message, on the usage stream:
// bourse.v1.server.<server>.readings (JetStream).
const VerbReadings = "readings"

// ReadingsSubject is where server s publishes its readings messages.
func ReadingsSubject(s string) string { return Prefix + ".server." + s + "." + VerbReadings }

// ReadingsSubjects is the usage stream's filter for readings messages.
const ReadingsSubjects = Prefix + ".server.*." + VerbReadings

// MaxReadings is the most bytes a readings message may have: the usage
// stream refuses larger ones, and a server splits its readings over as
// many messages as they need.
const MaxReadings = 64 << 10

// Readings is a readings message: readings of the server's contracts,
// each as its own JSON body (what the server signs) with its signature,
// as a reading on its own would travel. Each is counted as it would be on
// its own: idempotent by its sequence number, stored per contract.
type Readings struct {
	Readings []SignedReading `json:"readings"`
}

// SignedReading is one reading of a readings message: the reading's
// bytes, exactly as signed, and the signature (empty where the server
// does not sign).
type SignedReading struct {
	Reading json.RawMessage `json:"reading"`
	Sig     string          `json:"sig,omitempty"`
}

// AppendReadings writes a readings message of bodies (each a reading's
// JSON, compact) and their signatures (sigs[i] for bodies[i]; empty for
// none) to dst. It writes the bodies byte for byte, so that each
// signature still holds of its reading.
func AppendReadings(dst []byte, bodies [][]byte, sigs []string) []byte {
	dst = append(dst, `{"readings":[`...)
	for i, b := range bodies {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"reading":`...)
		dst = append(dst, b...)
		if sigs[i] != "" {
			dst = append(dst, `,"sig":`...)
			dst = strconv.AppendQuote(dst, sigs[i])
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// ReadingsOverhead is what a readings message adds to each reading's body
// and signature: to size messages within MaxReadings.
const ReadingsOverhead = len(`{"reading":,"sig":""},`)

// DecodeReadings reads a readings message strictly (Unmarshal); each
// reading in it is the caller's to decode and check (DecodeReading).
func DecodeReadings(data []byte) (Readings, error) {
	var r Readings
	if err := Unmarshal(data, &r); err != nil {
		return Readings{}, err
	}
	for i, s := range r.Readings {
		if len(s.Reading) == 0 || len(s.Reading) > MaxReading {
			return Readings{}, &bourse.Error{Code: bourse.EInvalid, Op: "protocol.DecodeReadings", Field: "readings[" + strconv.Itoa(i) + "].reading",
				Message: "want a reading of at most " + strconv.Itoa(MaxReading) + " bytes"}
		}
	}
	return r, nil
}

// ReadingsMsgID is the JetStream de-duplication id of a readings message
// of server's with body data: "<server>:readings:<digest>", the digest a
// hash of the whole body, so that a message retried keeps its id and is
// stored once, and no other server can spend it first (MsgID says why
// that matters).
func ReadingsMsgID(server string, data []byte) string {
	h := sha256.Sum256(data)
	return server + ":readings:" + hex.EncodeToString(h[:8])
}
