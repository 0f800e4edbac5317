package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Reading is a server's cumulative measurement of one contract. Readings of
// a contract carry increasing sequence numbers; the exchange counts each
// sequence number once and ignores stale ones. The final reading settles.
type Reading struct {
	Contract string          `json:"contract"`
	Seq      uint64          `json:"seq"`
	U        decimal.Decimal `json:"u"`      // GPU-seconds busy
	T        Duration        `json:"t"`      // wall time since start
	S        decimal.Decimal `json:"s"`      // minimum share, GPUs
	EnergyJ  decimal.Decimal `json:"energy"` // joules, where the meter knows
	At       time.Time       `json:"at"`
	Final    bool            `json:"final,omitempty"`
	Reason   Reason          `json:"reason,omitempty"` // with Final
	ExitCode *int            `json:"exit_code,omitempty"`
}

// Usage is the reading's quantities as the contract package prices them.
func (r Reading) Usage() contract.Usage {
	return contract.Usage{U: r.U, T: time.Duration(r.T), S: r.S}
}

// MsgID is the JetStream de-duplication id of a reading that server
// publishes: "<server>:<contract>:<seq>:<digest>", the digest a hash of
// the reading's content. JetStream de-duplicates ids across the whole
// stream, and every server asked in a negotiation learns the contract's
// id: with an id anyone could work out, a losing server could spend the
// winner's ids on its own subject and have the winner's readings dropped
// as duplicates. No one who has not seen a reading can work out its
// digest (its time is to the nanosecond, its quantities measured), while
// the same reading, retried or replayed from an outbox, keeps its id and
// is stored once.
func (r Reading) MsgID(server string) string {
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

// serverReasons are the reasons a server may give in a final reading; the
// others (server_lost, not_started, expired) are the exchange's verdicts.
var serverReasons = map[Reason]bool{
	ReasonCompleted: true, ReasonKilled: true, ReasonSuspended: true, ReasonTimeLimit: true,
	ReasonExhausted: true, ReasonPreempted: true, ReasonShutdown: true, ReasonFailed: true,
}

// Check checks a reading as it arrives, before anything stores it: a
// contract id, a sequence number from 1, every quantity within the limits
// of an offer's numbers (contract.CheckQuantity: energy too), a time, and a
// reason only on a final reading and only one a server may give. A reading
// that passes can always be priced, so storing it can never lock an
// escrow. Whether its T and U are believable is the exchange's to judge,
// by its own clock (docs/protocol.md, "What the exchange believes").
func (r Reading) Check() error {
	const op = "protocol.Reading"
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: op, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if err := CheckID(r.Contract); err != nil {
		return bad("contract", "%v", err)
	}
	if r.Seq == 0 {
		return bad("seq", "sequence numbers start at 1")
	}
	if err := r.Usage().Check(op); err != nil {
		return err
	}
	if err := contract.CheckQuantity(op, "energy", r.EnergyJ); err != nil {
		return err
	}
	if y := r.At.UTC().Year(); r.At.IsZero() || y < 2000 || y > 9999 {
		return bad("at", "%s is not a time a meter read", r.At.UTC().Format(time.RFC3339))
	}
	switch {
	case !r.Final && r.Reason != "":
		return bad("reason", "only a final reading has a reason")
	case r.Final && r.Reason != "" && !serverReasons[r.Reason]:
		return bad("reason", "%q is not a reason a server gives", r.Reason)
	}
	return nil
}

// DecodeReading reads a reading strictly (Unmarshal) and checks it.
func DecodeReading(data []byte) (Reading, error) {
	var r Reading
	if err := Unmarshal(data, &r); err != nil {
		return Reading{}, err
	}
	if err := r.Check(); err != nil {
		return Reading{}, err
	}
	return r, nil
}
