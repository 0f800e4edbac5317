package image

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"
)

// ent is an entry of a layer a test writes: a header, and the body of a
// regular file (whose Size it sets unless the header does).
type ent struct {
	tar.Header
	body string
}

func file(name, body string) ent {
	return ent{tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body}
}
func dir(name string) ent { return ent{tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}, ""} }
func symlink(name, target string) ent {
	return ent{tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}, ""}
}
func hardlink(name, target string) ent {
	return ent{tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}, ""}
}

// tarOf writes entries as an uncompressed tar. A header whose Size is set
// beyond its body is written without the rest, as a bomb's would be.
func tarOf(tb testing.TB, ents ...ent) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range ents {
		h := e.Header
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.body))
		}
		if h.ModTime.IsZero() {
			h.ModTime = time.Unix(1_700_000_000, 0)
		}
		if err := tw.WriteHeader(&h); err != nil {
			tb.Fatal(err)
		}
		if h.Size > int64(len(e.body)) {
			return buf.Bytes() // the lie: no body, no end
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}
