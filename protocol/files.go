package protocol

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// A client's files (contract.Files) travel from the client to the
// contract's server alone: the client puts the archive into a JetStream
// object store bucket of its own, FilesBucketOf(client), which NATS
// permissions let no other client or server read or write (FilesSubjects);
// the exchange makes the bucket and reads it, and hands each server, on
// the server's own subjects, the files of its own contracts only
// (docs/protocol.md, "Files").

// VerbFiles (client, request) asks the exchange for the client's bucket
// and whether it holds files already: bourse.v1.client.<c>.files.
const VerbFiles = "files"

// VerbFetch (server, request) reads a page of the files of a contract
// of the server's: bourse.v1.server.<s>.fetch.
const VerbFetch = "fetch"

// FilesBucketPrefix begins the name of every client's files bucket.
const FilesBucketPrefix = "BOURSE_FILES_"

// FilesBucketOf is client c's files bucket. An object store bucket is
// named by A-Z a-z 0-9 _ - alone, and a client's id may hold @: "_" is
// written "__" and "@" "_a", so that no two ids share a bucket.
func FilesBucketOf(c string) string {
	var b strings.Builder
	b.WriteString(FilesBucketPrefix)
	for i := 0; i < len(c); i++ {
		switch c[i] {
		case '_':
			b.WriteString("__")
		case '@':
			b.WriteString("_a")
		default:
			b.WriteByte(c[i])
		}
	}
	return b.String()
}

// FilesStreamOf is the JetStream stream that holds client c's bucket.
func FilesStreamOf(c string) string { return "OBJ_" + FilesBucketOf(c) }

// FilesSubjects are what client c may publish to put its files into its
// bucket, and no more: the bucket's own subjects (chunks and meta), and
// the JetStream API calls nats.go's object store makes of that one
// stream to put and delete (its info; direct and plain gets of a meta;
// purges of an object's chunks). Neither the creation of a stream nor a
// change of its configuration is among them: the exchange makes the
// bucket and bounds it.
func FilesSubjects(c string) []string {
	b, s := FilesBucketOf(c), FilesStreamOf(c)
	return []string{
		"$O." + b + ".>",
		"$JS.API.STREAM.INFO." + s,
		"$JS.API.DIRECT.GET." + s,
		"$JS.API.DIRECT.GET." + s + ".>",
		"$JS.API.STREAM.MSG.GET." + s,
		"$JS.API.STREAM.PURGE." + s,
	}
}

// FilesObject is the name of the object that holds the files f names in
// their client's bucket: their digest.
func FilesObject(f contract.Files) string { return f.Digest }

// Sizes of the files' chunks: the client's chunks (FilesChunk, nats.go's
// own), the most a bucket takes in one message (MaxFilesChunk, its
// streams' max_msg_size less the subject and headers), and the most one
// fetch reply holds (MaxFetchBytes, within NATS's 1 MiB payload once
// written as base64 in JSON).
const (
	FilesChunk    = 128 << 10
	MaxFilesChunk = 256 << 10
	MaxFetchBytes = 512 << 10
)

// FilesRequest asks for client's bucket before it puts files f there.
type FilesRequest struct {
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

// Check checks the files a request names (contract.Files' rules).
func (r FilesRequest) Check() error {
	if err := contract.CheckFilesDigest("protocol.FilesRequest", "digest", r.Digest); err != nil {
		return err
	}
	if r.Bytes < 1 || r.Bytes > contract.MaxFilesBytes {
		return &bourse.Error{Code: bourse.EInvalidOffer, Op: "protocol.FilesRequest", Field: "bytes",
			Message: fmt.Sprintf("%d; want 1..%d", r.Bytes, int64(contract.MaxFilesBytes))}
	}
	return nil
}

// FilesReply says where the client puts its files: Bucket (made, if it
// was not) and Object, in that bucket. Stored says that the object is
// there already, complete, of the size asked: nothing need be put. The
// exchange takes archives of at most MaxBytes, and keeps them at most
// MaxAge after they were put, or until the last contract that names them
// ends; Quota bounds all of the client's at once.
type FilesReply struct {
	Bucket   string            `json:"bucket"`
	Object   string            `json:"object"`
	Stored   bool              `json:"stored,omitempty"`
	MaxBytes int64             `json:"max_bytes"`
	Quota    int64             `json:"quota"`
	MaxAge   contract.Duration `json:"max_age"`
}

// FetchRequest reads a page of contract's files, the chunks the client's
// bucket stored after its stream's sequence number After (0 for the
// start).
type FetchRequest struct {
	Contract string `json:"contract"`
	After    uint64 `json:"after,omitempty"`
}

// FetchReply is a page of a contract's files: chunks in order, at most
// MaxFetchBytes of them; Next is the After of the next request, and Done
// says there is no more. The server checks what it was given against the
// contract's terms (job.files: digest and bytes), whatever it is.
type FetchReply struct {
	Chunks [][]byte `json:"chunks"`
	Next   uint64   `json:"next"`
	Done   bool     `json:"done,omitempty"`
}
