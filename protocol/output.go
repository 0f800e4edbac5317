package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/bourse/bourse/trade"
)

// A job's output goes from its server's disk to its client only, through
// the exchange: the server publishes it to the output stream under its own
// subjects, which no party but the exchange may read (NATS permissions),
// and the exchange answers the contract's client alone, on the client's
// own subjects (docs/protocol.md, "Output").

// Client request verbs for a contract's output.
const (
	VerbLogs    = "logs"    // the job's stdout and stderr
	VerbResults = "results" // the files the job left in $BOURSE_RESULTS, as a tar archive
)

// VerbOutput is the server's JetStream verb:
// bourse.v1.server.<server>.output.<contract>.<part>.
const VerbOutput = "output"

// Parts of a contract's output: each is a subject of its own.
const (
	PartLog     = "log"     // chunks of stdout and stderr
	PartResults = "results" // chunks of the results archive
)

// Streams a chunk belongs to.
const (
	StreamStdout  = "stdout"
	StreamStderr  = "stderr"
	StreamResults = "results"
)

// OutputStream is the JetStream stream of jobs' output.
const OutputStream = "BOURSE_OUTPUT"

// OutputSubjects is the output stream's subject filter.
const OutputSubjects = Prefix + ".server.*." + VerbOutput + ".*.*"

// OutputSubject is where server s publishes part of contract id's output.
func OutputSubject(s, id, part string) string {
	return Prefix + ".server." + s + "." + VerbOutput + "." + id + "." + part
}

// Headers of a message on the output stream. A chunk carries its stream
// and its offset in that stream; its body is the bytes, as the job wrote
// them. A part's last message has StreamHeader "end" and an OutputEnd as
// its JSON body.
const (
	StreamHeader = "Bourse-Stream"
	OffsetHeader = "Bourse-Offset"
)

// StreamEnd is the StreamHeader of a part's last message.
const StreamEnd = "end"

// MaxOutputChunk bounds the bytes of one chunk: the output stream refuses
// larger messages.
const MaxOutputChunk = 64 << 10

// OutputMsgID is the de-duplication id of a chunk that server publishes:
// "<server>:out:<contract>:<stream>:<offset>:<digest>", the digest a hash
// of the bytes. The same chunk sent again (after a lost acknowledgement,
// or by the server's next run) is stored once; no one who has not seen the
// bytes can work the id out and spend it first (as with readings, MsgID).
func OutputMsgID(server, contract, stream string, offset int64, data []byte) string {
	h := sha256.Sum256(data)
	return server + ":out:" + contract + ":" + stream + ":" + strconv.FormatInt(offset, 10) + ":" + hex.EncodeToString(h[:8])
}

// OutputEnd is the body of a part's last message: what the server kept,
// so that a reader knows it has all of it.
type OutputEnd struct {
	// Log: the bytes of stdout and stderr, and the cap on each (a stream
	// of that size was cut there: the job wrote more, which was dropped).
	Stdout int64 `json:"stdout,omitempty"`
	Stderr int64 `json:"stderr,omitempty"`
	Cap    int64 `json:"cap,omitempty"`
	// Results: the bytes of the archive, the cap on it, and the files
	// left out of it (past the cap, or not regular files), with why.
	Results int64    `json:"results,omitempty"`
	Omitted []string `json:"omitted,omitempty"`
}

// OutputRequest reads a contract's output (bourse.v1.client.<c>.logs or
// .results): the chunks stored after the output stream's sequence number
// After (0 for the start), at most MaxBytes of them (DefaultOutputBytes if
// 0, at most MaxOutputBytes).
type OutputRequest struct {
	Contract string `json:"contract"`
	After    uint64 `json:"after,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
}

// Bounds of an OutputReply's chunks.
const (
	DefaultOutputBytes = 256 << 10
	MaxOutputBytes     = 512 << 10
)

// OutputReply is a page of a contract's output. Chunks are in the order
// the server wrote them; place each at its offset in its stream: a chunk
// may repeat bytes of an earlier one (the server sent them again after a
// restart). Next is the After of the next request. Done says that there
// is no more to come: End came (it says how much there was), or the job
// wrote nothing (it never started, or ran on the synthetic runner).
type OutputReply struct {
	Chunks []OutputChunk `json:"chunks"`
	Next   uint64        `json:"next"`
	Done   bool          `json:"done,omitempty"`
	End    *OutputEnd    `json:"end,omitempty"`
	// State is the contract's, for a reader that follows a job's output
	// while it runs.
	State trade.State `json:"state"`
}

// OutputChunk is bytes of one stream of a job's output, at an offset.
type OutputChunk struct {
	Seq    uint64 `json:"seq"` // its sequence number in the output stream
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"` // base64 in JSON
}
