// Package untartest writes tar archives for tests, honest or not: the
// layers of images and the files of jobs that package untar unpacks.
package untartest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"testing"
	"time"
)

// Entry is an entry of an archive a test writes: a header, and the body
// of a regular file (whose Size Tar sets unless the header does).
type Entry struct {
	tar.Header
	Body string
}

// File, Dir, Symlink and Hardlink are entries of those kinds.
func File(name, body string) Entry {
	return Entry{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body}
}
func Dir(name string) Entry {
	return Entry{tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}, ""}
}
func Symlink(name, target string) Entry {
	return Entry{tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}, ""}
}
func Hardlink(name, target string) Entry {
	return Entry{tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}, ""}
}

// Device is a character device node (the host's memory, were it made).
func Device(name string) Entry {
	return Entry{tar.Header{Name: name, Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 1}, ""}
}

// Tar writes entries as an uncompressed tar. A header whose Size is set
// beyond its body is written without the rest, as a bomb's would be.
func Tar(tb testing.TB, ents ...Entry) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.Header
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.Body))
		}
		if h.ModTime.IsZero() {
			h.ModTime = time.Unix(1_700_000_000, 0)
		}
		if err := tw.WriteHeader(&h); err != nil {
			tb.Fatal(err)
		}
		if h.Size > int64(len(e.Body)) {
			return buf.Bytes() // the lie: no body, no end
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// Names lists a folder, or fails.
func Names(tb testing.TB, d string) []string {
	tb.Helper()
	des, err := os.ReadDir(d)
	if err != nil {
		tb.Fatal(err)
	}
	var n []string
	for _, de := range des {
		n = append(n, de.Name())
	}
	return n
}
