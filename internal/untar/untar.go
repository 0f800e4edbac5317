// Package untar unpacks tar archives, from parties the server does not
// trust, into a folder that no entry can climb out of: a container
// image's layers (package server/image) and a client's files (package
// server/process).
//
// Every path is resolved by the kernel in the folder as under chroot
// (openat2 with RESOLVE_IN_ROOT, Linux 5.6 or later): an absolute
// symlink, or a "..", in a path stays in the folder, and no symlink from
// an archive is followed on the host. Entries are never written through a
// symlink at their own name (what is there is removed first). What each
// kind of entry does:
//
//   - a name with ".." that climbs out of the folder: refused; a leading
//     "/" is dropped, as tar and Docker drop it;
//   - a path through a symlink that dangles in the folder: refused, as
//     Docker refuses it;
//   - a hard link: only to a file or symlink already in the folder, its
//     path resolved in the folder; anything else is refused;
//   - device nodes and fifos: refused, or left out with a log line where
//     Options.SkipDevices says (an image's: the runtime makes the
//     container's /dev, and base images carry harmless /dev entries);
//   - whiteouts, where Options.Whiteouts says (an image's layers):
//     ".wh.name" removes name from the layers below, ".wh..wh..opq" hides
//     what the layers below put in its directory; otherwise such a name
//     is a file like any other;
//   - modes: files 0644, or 0755 if the archive makes them executable by
//     anyone; directories 0755; no setuid, setgid or sticky bit;
//   - ownership is not kept: everything belongs to Options.Owner, or to
//     the user that unpacks. No extended attributes are kept, so no file
//     capabilities. Files and symlinks keep their modification times
//     (Python compares its sources' with its bytecode's); directories do
//     not.
//
// The sizes tar headers declare for every entry with data count against
// Options.MaxBytes before the data is read, so that a bomb (a huge or
// sparse size) is refused at its header; the entries count against
// MaxFiles. An archive may be gzip, zstd or plain, told by its first bytes.
//
// A refusal is a *bourse.Error with code EInvalidOffer naming
// Options.Field, which the archive's party can be told; the host's own
// trouble (a full disk) is an error without a code.
package untar

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"log/slog"

	"github.com/klauspost/compress/zstd"

	"github.com/bourse/bourse"
)

// zstdMaxWindow bounds the memory a zstd archive may ask the decoder for:
// what zstd --long (2^27) takes, well above its levels' 8 MiB.
const zstdMaxWindow = 1 << 27

// Options say how archives are unpacked into a Root.
type Options struct {
	// MaxBytes and MaxFiles bound what the archives applied to a Root
	// hold in all: the bytes their headers declare, and their entries.
	MaxBytes, MaxFiles int64
	// Op and Field name the operation and the field in refusals
	// ("image", "job.files"), and What the archive ("the image").
	Op, Field, What string
	// Whiteouts applies OCI whiteouts, as an image's layers need.
	Whiteouts bool
	// SkipDevices leaves device nodes and fifos out, with a log line,
	// where they would otherwise be refused.
	SkipDevices bool
	// Owner, if set, is who owns every entry unpacked, as the job user
	// who works in the folder must; otherwise the unpacking user.
	Owner *Owner
	Log   *slog.Logger // nil: slog.Default()
}

// Owner is a user and group to own what is unpacked.
type Owner struct{ UID, GID int }

// Root is a folder that archives are unpacked into, open until Close.
type Root struct {
	opt          Options
	bytes, files int64
	root         int // the folder, opened
}

// Bytes are the bytes the archives applied so far declared for their
// entries' data; Files the entries.
func (u *Root) Bytes() int64 { return u.bytes }
func (u *Root) Files() int64 { return u.files }

func newRoot(opt Options) *Root {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	if opt.What == "" {
		opt.What = "the archive"
	}
	return &Root{opt: opt, root: -1}
}

// bad is an error of the archive's, for its party to hear.
func (u *Root) bad(format string, args ...any) error {
	return &bourse.Error{Code: bourse.EInvalidOffer, Op: u.opt.Op, Field: u.opt.Field, Message: fmt.Sprintf(format, args...)}
}

// decompress reads an archive as gzip, zstd or a plain tar, by its first
// bytes rather than by what its sender calls it, as Docker does.
func decompress(br *bufio.Reader) (io.Reader, func(), error) {
	magic, _ := br.Peek(4)
	switch {
	case len(magic) >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return z, func() { z.Close() }, nil
	case len(magic) == 4 && string(magic) == "\x28\xb5\x2f\xfd":
		z, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow))
		if err != nil {
			return nil, nil, err
		}
		return z, z.Close, nil
	}
	return br, func() {}, nil
}
