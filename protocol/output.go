package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/bourse/bourse/contract"
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

// Each server's output goes into a JetStream stream of its own,
// OutputStreamOf(server), which takes only that server's subjects
// (OutputSubjectsOf). A stream is what JetStream de-duplicates message
// ids in and what it bounds in bytes: apart, no server can spend another's
// chunk ids, and a server that fills its stream pushes out only its own
// jobs' output (docs/protocol.md, "output").

// OutputStreamPrefix begins the name of every server's output stream.
const OutputStreamPrefix = "BOURSE_OUTPUT_"

// OutputStreamOf is the output stream of server s.
func OutputStreamOf(s string) string { return OutputStreamPrefix + s }

// OutputSubjectsOf is the subject filter of server s's output stream.
func OutputSubjectsOf(s string) string {
	return Prefix + ".server." + s + "." + VerbOutput + ".*.*"
}

// OutputSubjects matches every server's output subjects.
const OutputSubjects = Prefix + ".server.*." + VerbOutput + ".*.*"

// SharedOutputStream is the one stream that held every server's output
// before each had its own. An exchange that finds it with its old
// subjects retires it (natsvc): what it holds stays until its age runs
// out, for operators, and is no longer read for clients.
const SharedOutputStream = "BOURSE_OUTPUT"

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
// or by the server's next run) is stored once. Many chunks' bytes can be
// guessed (an empty archive, an end), so their ids can be too: what keeps
// another server from spending them first is that JetStream
// de-duplicates within a stream, and each server has its own.
func OutputMsgID(server, id, stream string, offset int64, data []byte) string {
	h := sha256.Sum256(data)
	return server + ":out:" + id + ":" + stream + ":" + strconv.FormatInt(offset, 10) + ":" + hex.EncodeToString(h[:8])
}

// OutputCaps are the bounds a server declares on the output of a job it
// starts (protocol.Started), in bytes: Log on each of stdout and stderr,
// Results on the results archive. The exchange records them on the
// contract, relays no byte past them, and a client takes no more.
type OutputCaps = contract.OutputCaps

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
	State contract.State `json:"state"`
	// Cap bounds the bytes of each stream of the part that the exchange
	// relays (each of stdout and stderr, or the results archive): the cap
	// the contract's server declared at the start, within the server's
	// quota of the output stream; DefaultLogCap or DefaultResultsCap, so
	// bounded, where the server declared none. Chunks past it are dropped.
	Cap int64 `json:"cap,omitempty"`
	// Dropped says that the server's output stream no longer holds output
	// stored since the contract was accepted that this request would have
	// read (the server's quota was full and its oldest output went, or
	// its age ran out): some of the contract's output may be lost. A
	// reader that has the part's end and every byte it counts has it all
	// regardless; one that has not, has lost what it lacks.
	Dropped bool `json:"dropped,omitempty"`
}

// Caps where a server declared none: those of the server agent's
// defaults (the process runner's output cap, the spool's results cap).
const (
	DefaultLogCap     = 64 << 20
	DefaultResultsCap = 64 << 20
)

// OutputChunk is bytes of one stream of a job's output, at an offset.
type OutputChunk struct {
	Seq    uint64 `json:"seq"` // its sequence number in the output stream
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"` // base64 in JSON
}
