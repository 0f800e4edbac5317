package contract

import (
	"strings"
	"testing"

	"github.com/bourse/bourse"
)

const someSHA = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestParseImageRef: references read as docker and the distribution
// grammar read them, each a case worked out by hand.
func TestParseImageRef(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want ImageRef
	}{
		{"busybox", ImageRef{"docker.io", "library/busybox", "latest", ""}},
		{"busybox:1.36", ImageRef{"docker.io", "library/busybox", "1.36", ""}},
		{"acme/train", ImageRef{"docker.io", "acme/train", "latest", ""}},
		{"index.docker.io/busybox", ImageRef{"docker.io", "library/busybox", "latest", ""}},
		{"docker.io/library/busybox:1", ImageRef{"docker.io", "library/busybox", "1", ""}},
		{"ghcr.io/acme/train:v1.2-rc_3", ImageRef{"ghcr.io", "acme/train", "v1.2-rc_3", ""}},
		{"127.0.0.1:5000/tests/box", ImageRef{"127.0.0.1:5000", "tests/box", "latest", ""}},
		{"localhost:5000/box:t", ImageRef{"localhost:5000", "box", "t", ""}},
		{"localhost/box", ImageRef{"localhost", "box", "latest", ""}},
		{"Registry/box", ImageRef{"Registry", "box", "latest", ""}},
		{"ghcr.io/a/b/c__d.e-f", ImageRef{"ghcr.io", "a/b/c__d.e-f", "latest", ""}},
		{"busybox@" + someSHA, ImageRef{"docker.io", "library/busybox", "", someSHA}},
		{"ghcr.io/a/b:v1@" + someSHA, ImageRef{"ghcr.io", "a/b", "v1", someSHA}},
	} {
		got, err := ParseImageRef(tt.in)
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("%q: got %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

// TestParseImageRefRefuses: what is not a reference is refused, each with
// a message that says which part is wrong.
func TestParseImageRefRefuses(t *testing.T) {
	for _, tt := range []struct{ in, says string }{
		{"", "1..512"},
		{strings.Repeat("a", MaxImageRef+1), "1..512"},
		{"Busybox", "repository's part"},
		{"ghcr.io/Acme/train", "repository's part"},
		{"ghcr.io//train", "repository's part"},
		{"ghcr.io/acme/", "repository's part"},
		{"a..b/c", `registry "a..b"`},
		{"-bad.io/c", "registry"},
		{"ghcr.io:0/c", "port"},
		{"ghcr.io:99999/c", "port"},
		{"ghcr.io:x/c", "port"},
		{"[::1]:5000/c", "registry"},
		{"busybox:", "tag"},
		{"busybox:-x", "tag"},
		{"busybox:" + strings.Repeat("t", 129), "tag"},
		{"busybox@sha256:abc", "digest"},
		{"busybox@md5:0123456789abcdef0123456789abcdef", "digest"},
		{"busybox@" + strings.ToUpper(someSHA), "digest"},
		{"a b", "repository's part"},
		{":tag", "repository's part"},
		{"@" + someSHA, "repository's part"},
		{"ghcr.io/" + strings.Repeat("a", 250), "at most 255"},
	} {
		_, err := ParseImageRef(tt.in)
		if bourse.ErrorCode(err) != bourse.EInvalidOffer || !strings.Contains(bourse.ErrorMessage(err), tt.says) {
			t.Errorf("%q: got %v, want invalid_offer saying %q", tt.in, err, tt.says)
		}
		var e *bourse.Error
		if err != nil && (!asError(err, &e) || e.Field != "job.image") {
			t.Errorf("%q: field %q, want job.image", tt.in, e.Field)
		}
	}
}

func asError(err error, e **bourse.Error) bool {
	v, ok := err.(*bourse.Error)
	*e = v
	return ok
}

// FuzzParseImageRef: whatever parses prints as a reference that parses
// back to the same, and prints the same again; nothing panics.
func FuzzParseImageRef(f *testing.F) {
	for _, s := range []string{"busybox", "ghcr.io/acme/train:v1", "127.0.0.1:5000/a/b:c@" + someSHA,
		"localhost/x", "a/b/c", "Registry/box", "x@sha512:" + strings.Repeat("ab", 64), "a:b:c", "a@b@c", "/", ":"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseImageRef(s)
		if err != nil {
			if bourse.ErrorCode(err) != bourse.EInvalidOffer {
				t.Fatalf("%q: error not invalid_offer: %v", s, err)
			}
			return
		}
		if r.Registry == "" || r.Repository == "" || (r.Tag == "" && r.Digest == "") {
			t.Fatalf("%q: parsed to an incomplete %#v", s, r)
		}
		back, err := ParseImageRef(r.String())
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", s, r.String(), err)
		}
		if back != r {
			t.Fatalf("%q: %#v printed and parsed back is %#v", s, r, back)
		}
	})
}
