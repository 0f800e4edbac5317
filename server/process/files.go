package process

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/internal/untar"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
)

// Defaults of a Host's files bounds.
const (
	DefaultFilesBytes = 1 << 30 // a job's files: the archive, and what it unpacks to
	DefaultFilesCount = 100_000 // the entries of its archive
)

// filesPrefix begins the name of an archive being fetched, in the
// output directory: not a contract's id, so the spool passes it over.
const filesPrefix = ".files-"

// Files says what the host takes of a job's files, for its runner's
// hello: nil where it takes none.
func (h *Host) Files() *protocol.Files {
	if h.cfg.FilesBytes <= 0 {
		return nil
	}
	return &protocol.Files{MaxBytes: h.cfg.FilesBytes}
}

// fetchFiles fetches the files a's job names into a file of the agent's
// own (before any of the job's, so that a fetch that fails holds no job
// user), and checks it against the terms: no more bytes than they say,
// the digest they say. The file is returned read from its start; the
// caller closes it, which removes it.
func (h *Host) fetchFiles(ctx context.Context, a server.Assignment, f contract.Files) (*archive, error) {
	const op = "process.Start"
	refuse := func(code bourse.Code, format string, args ...any) error {
		return &bourse.Error{Code: code, Op: op, Field: "job.files", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case h.cfg.FilesBytes <= 0:
		return nil, refuse(bourse.EJobUnsupported, "this server takes no files")
	case f.Bytes > h.cfg.FilesBytes:
		return nil, refuse(bourse.EJobUnsupported, "the files are %d bytes; this server takes at most %d", f.Bytes, h.cfg.FilesBytes)
	case a.Files == nil:
		return nil, refuse(bourse.EUnavailable, "this server has no way to fetch files")
	}
	tmp, err := os.CreateTemp(h.cfg.OutputDir, filesPrefix+a.Contract+"-*")
	if err != nil {
		return nil, fmt.Errorf("%s: the files: %w", op, err)
	}
	arc := &archive{File: tmp}
	w := &bounded{w: tmp, h: sha256.New(), max: f.Bytes}
	err = a.Files.Fetch(ctx, a.Contract, w)
	switch {
	case w.over:
		err = refuse(bourse.EInvalidOffer, "the files fetched are more than the %d bytes the terms say", f.Bytes)
	case err != nil && bourse.ErrorCode(err) == bourse.EInternal:
		err = &bourse.Error{Code: bourse.EUnavailable, Op: op, Field: "job.files", Message: "the files could not be fetched: " + err.Error(), Err: err}
	case err != nil:
		err = &bourse.Error{Code: bourse.ErrorCode(err), Op: op, Field: "job.files", Message: "the files could not be fetched: " + bourse.ErrorMessage(err), Err: err}
	case w.n != f.Bytes:
		err = refuse(bourse.EInvalidOffer, "the files fetched are %d bytes; the terms say %d", w.n, f.Bytes)
	case contract.FilesDigestPrefix+hex.EncodeToString(w.h.Sum(nil)) != f.Digest:
		err = refuse(bourse.EInvalidOffer, "the files fetched do not match the digest the terms name (%s): they are not what was offered", f.Digest)
	}
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		arc.Close()
		return nil, err
	}
	return arc, nil
}

// unpackFiles unpacks the job's files into its working folder, every
// entry its user's, within the host's bounds (package untar: nothing out
// of the folder, no device nodes, no setuid bits). The job's user has no
// process yet: nothing else writes the folder meanwhile.
func (h *Host) unpackFiles(arc *archive, s Slot) error {
	var owner *untar.Owner
	if s.UID >= 0 {
		owner = &untar.Owner{UID: s.UID, GID: s.GID}
	}
	root, err := untar.Open(s.Work, untar.Options{MaxBytes: h.cfg.FilesBytes, MaxFiles: h.cfg.FilesCount,
		Op: "process.Start", Field: "job.files", What: "the files", Owner: owner, Log: h.log.With("contract", s.Contract)})
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Apply(arc)
}

// archive is a job's files as fetched, removed once closed.
type archive struct{ *os.File }

func (a *archive) Close() {
	a.File.Close()
	_ = os.Remove(a.Name())
}

// jobFiles are the files a's job names, nil for none.
func jobFiles(a server.Assignment) *contract.Files {
	if a.Job == nil {
		return nil
	}
	return a.Job.Files
}

// removeFetched removes the archives a host that stopped left being
// fetched.
func removeFetched(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), filesPrefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// bounded writes to w and hashes what it writes, and refuses more than
// max bytes.
type bounded struct {
	w    io.Writer
	h    hash.Hash
	n    int64
	max  int64
	over bool
}

var errOver = errors.New("more bytes than the terms say")

func (b *bounded) Write(p []byte) (int, error) {
	if int64(len(p)) > b.max-b.n {
		b.over = true
		return 0, errOver
	}
	n, err := b.w.Write(p)
	b.h.Write(p[:n])
	b.n += int64(n)
	return n, err
}
