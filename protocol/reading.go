package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// MsgID is the JetStream de-duplication id of reading r that server
// publishes: "<server>:<contract>:<seq>:<digest>", the digest a hash of
// the reading's content. JetStream de-duplicates ids across the whole
// stream, and every server asked in a negotiation learns the contract's
// id: with an id anyone could work out, a losing server could spend the
// winner's ids on its own subject and have the winner's readings dropped
// as duplicates. No one who has not seen a reading can work out its
// digest (its time is to the nanosecond, its quantities measured), while
// the same reading, retried or replayed from an outbox, keeps its id and
// is stored once.
func MsgID(server string, r contract.Reading) string {
	code := ""
	if r.ExitCode != nil {
		code = strconv.Itoa(*r.ExitCode)
	}
	h := sha256.Sum256([]byte(strings.Join([]string{
		r.Contract, strconv.FormatUint(r.Seq, 10), r.U.String(), strconv.FormatInt(int64(r.T), 10),
		r.S.String(), r.EnergyJ.String(), strconv.FormatInt(r.At.UnixNano(), 10),
		strconv.FormatBool(r.Final), string(r.Reason), code,
	}, "\x1f")))
	return server + ":" + r.Contract + ":" + strconv.FormatUint(r.Seq, 10) + ":" + hex.EncodeToString(h[:8])
}

// DecodeReading reads a reading strictly (Unmarshal) and checks it.
func DecodeReading(data []byte) (contract.Reading, error) {
	var r contract.Reading
	if err := Unmarshal(data, &r); err != nil {
		return contract.Reading{}, err
	}
	if err := r.Check(); err != nil {
		return contract.Reading{}, err
	}
	if err := CheckID(r.Contract); err != nil {
		return contract.Reading{}, &bourse.Error{Code: bourse.EInvalid, Op: "protocol.DecodeReading", Field: "contract", Message: err.Error()}
	}
	return r, nil
}
