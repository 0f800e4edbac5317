package bidder

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// DefaultFilesBytes bounds the archive PutFiles packs unless told
// otherwise: 1 GiB, the exchange's default limit too.
const DefaultFilesBytes = 1 << 30

// PutFiles packs folder dir into a tar archive of at most maxBytes
// (DefaultFilesBytes if 0), puts it into the client's own bucket unless it
// is there already, and returns what an offer names to have its job
// work on them (contract.JobSpec.Files). The server unpacks them into the
// job's working folder before the job starts; the exchange keeps them
// while a contract or a waiting offer names them, and at most the age its
// reply says.
func (c *Client) PutFiles(ctx context.Context, dir string, maxBytes int64) (contract.Files, error) {
	tmp, err := os.CreateTemp("", "bourse-files-*.tar")
	if err != nil {
		return contract.Files{}, fmt.Errorf("bidder: files: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	f, err := Pack(dir, tmp, maxBytes)
	if err != nil {
		return contract.Files{}, err
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return contract.Files{}, fmt.Errorf("bidder: files: %w", err)
	}
	return f, c.PutArchive(ctx, tmp, f)
}

// PutArchive puts the archive r reads into the client's own bucket,
// named by f, unless the bucket holds it already. It takes f's word for
// what r holds: the server checks the bytes it fetches against f, and
// starts no job on files that do not match.
func (c *Client) PutArchive(ctx context.Context, r io.Reader, f contract.Files) error {
	const op = "bidder.PutArchive"
	var reply protocol.FilesReply
	if err := c.request(ctx, protocol.VerbFiles, protocol.FilesRequest{Digest: f.Digest, Bytes: f.Bytes}, &reply); err != nil {
		return err
	}
	if reply.Stored {
		return nil
	}
	js, err := jetstream.New(c.nc)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	obs, err := js.ObjectStore(ctx, reply.Bucket)
	if err != nil {
		return &bourse.Error{Code: bourse.EUnavailable, Op: op, Message: "your files' bucket " + reply.Bucket + " did not open; retry", Err: err}
	}
	meta := jetstream.ObjectMeta{Name: reply.Object, Description: "files of " + c.cfg.ID,
		Opts: &jetstream.ObjectMetaOptions{ChunkSize: protocol.FilesChunk}}
	if _, err := obs.Put(ctx, meta, r); err != nil {
		return &bourse.Error{Code: bourse.EUnavailable, Op: op, Message: fmt.Sprintf(
			"the files were not put (your bucket holds at most %d bytes, for %s after they are put): %v", reply.Quota, time.Duration(reply.MaxAge), err), Err: err}
	}
	return nil
}

// Pack writes folder dir as a tar archive to w, at most maxBytes of it
// (DefaultFilesBytes if 0), and returns its digest and size. It holds the
// folder's folders, regular files and symbolic links, in name order,
// with their permissions (no setuid, setgid or sticky bit) and
// modification times, owned by no one: packing a folder that has not
// changed gives the same archive, which PutFiles then need not put
// again. Anything else in the folder (a device, a socket, a fifo) is an
// error that names it.
func Pack(dir string, w io.Writer, maxBytes int64) (contract.Files, error) {
	const op = "bidder.Pack"
	if maxBytes <= 0 {
		maxBytes = DefaultFilesBytes
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return contract.Files{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "files", Message: dir + " is not a folder"}
	}
	h := sha256.New()
	cw := &capped{w: io.MultiWriter(w, h), max: maxBytes}
	tw := tar.NewWriter(cw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		return packEntry(tw, p, filepath.ToSlash(rel), d)
	})
	if err == nil {
		err = tw.Close()
	}
	switch {
	case cw.over:
		return contract.Files{}, &bourse.Error{Code: bourse.EInvalid, Op: op, Field: "files",
			Message: fmt.Sprintf("%s packs to more than %d bytes, the most an offer's files may be here", dir, maxBytes)}
	case err != nil:
		return contract.Files{}, &bourse.Error{Code: bourse.ErrorCode(err), Op: op, Field: "files", Message: bourse.ErrorMessage(err), Err: err}
	}
	return contract.Files{Digest: contract.FilesDigestPrefix + hex.EncodeToString(h.Sum(nil)), Bytes: cw.n}, nil
}

// packEntry writes one entry of the folder: p on disk, name in the
// archive.
func packEntry(tw *tar.Writer, p, name string, d fs.DirEntry) error {
	fi, err := d.Info()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime().Truncate(time.Second), Format: tar.FormatPAX}
	switch m := fi.Mode(); {
	case m.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
	case m.IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
	case m&fs.ModeSymlink != 0:
		hdr.Typeflag = tar.TypeSymlink
		if hdr.Linkname, err = os.Readlink(p); err != nil {
			return err
		}
	default:
		return &bourse.Error{Code: bourse.EInvalid, Message: fmt.Sprintf("%s is not a file, a folder or a link (%v): take it out of the folder", p, m.Type())}
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	// The size the header said, whatever the file does meanwhile.
	if _, err := io.CopyN(tw, f, hdr.Size); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

// capped counts what goes to w, and refuses more than max.
type capped struct {
	w    io.Writer
	n    int64
	max  int64
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.n+int64(len(p)) > c.max {
		c.over = true
		return 0, fmt.Errorf("more than %d bytes", c.max)
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
