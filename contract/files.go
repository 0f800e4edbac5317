package contract

import (
	"strings"

	"github.com/bourse/bourse"
)

// MaxFilesBytes is the largest archive of files a job may name: no
// server takes more than its own limit (FilesLimit), which is less.
const MaxFilesBytes = 1 << 40

// FilesDigestPrefix begins a Files.Digest: the archive's SHA-256.
const FilesDigestPrefix = "sha256:"

// Files are a client's files that its job works on: a tar archive the
// client put where the contract's server alone may fetch it (through the
// exchange, which hands each server the files of its own contracts
// only), named by its digest, so that the server fetches exactly what
// was offered. The server unpacks them into the job's working folder
// before the job starts (docs/protocol.md, "Files").
type Files struct {
	Digest string // FilesDigestPrefix and the 64 lower-case hex digits of the archive's SHA-256
	Bytes  int64  // the archive's size: the most the server fetches
}

// CheckFilesDigest says what is wrong with a files digest, as an
// EInvalidOffer on field: "sha256:" and 64 lower-case hex digits.
func CheckFilesDigest(op, field, d string) error {
	hex, ok := strings.CutPrefix(d, FilesDigestPrefix)
	ok = ok && len(hex) == 64
	for i := 0; ok && i < len(hex); i++ {
		c := hex[i]
		ok = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	if !ok {
		return fail(bourse.EInvalidOffer, op, field, "%q: want sha256: and 64 lower-case hex digits", d)
	}
	return nil
}

func (f *Files) validate(op string) error {
	if err := CheckFilesDigest(op, "job.files.digest", f.Digest); err != nil {
		return err
	}
	if f.Bytes < 1 || f.Bytes > MaxFilesBytes {
		return fail(bourse.EInvalidOffer, op, "job.files.bytes", "%d; want 1..%d", f.Bytes, int64(MaxFilesBytes))
	}
	return nil
}

func (f *Files) equal(g *Files) bool {
	if f == nil || g == nil {
		return f == g
	}
	return *f == *g
}
