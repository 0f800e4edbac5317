package image

import (
	"strings"
	"testing"

	"github.com/bourse/bourse"
)

// refStore is a Store that only parses: no cache, no registry.
func refStore(tb testing.TB, allowed ...string) *Store {
	tb.Helper()
	s := &Store{insecure: map[string]bool{"127.0.0.1:5000": true}}
	for _, a := range allowed {
		e, err := allowEntry(a)
		if err != nil {
			tb.Fatal(err)
		}
		s.allowed = append(s.allowed, e)
	}
	return s
}

func TestParse(t *testing.T) {
	s := refStore(t, "registry.example.com/team", "docker.io/library/", "docker.io/someone/", "127.0.0.1:5000/", "Upper.Example.com/")
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, ref string
		code      bourse.Code // "" for allowed
		full      string      // the name as pulled, where allowed
	}{
		{"Tag", "registry.example.com/team/app:1", "", "registry.example.com/team/app:1"},
		{"TheRepositoryItself", "registry.example.com/team:1", "", "registry.example.com/team:1"},
		{"Below", "registry.example.com/team/a/b@" + digest, "", "registry.example.com/team/a/b@" + digest},
		{"PrefixConfusion", "registry.example.com/teamevil/app:1", bourse.EPermission, ""},
		{"OtherRegistry", "registry.example.org/team/app:1", bourse.EPermission, ""},
		{"RegistryAsRepository", "evil.example/registry.example.com/team/app", bourse.EPermission, ""},
		{"HubShortName", "busybox", "", "index.docker.io/library/busybox:latest"},
		{"HubFullName", "docker.io/library/busybox:1.36", "", "index.docker.io/library/busybox:1.36"},
		{"HubUser", "someone/app:1", "", "index.docker.io/someone/app:1"},
		{"HubOtherUser", "evil/busybox", bourse.EPermission, ""},
		{"HubUserConfusion", "someoneelse/app:1", bourse.EPermission, ""},
		{"WholeRegistry", "127.0.0.1:5000/any/thing:x", "", "127.0.0.1:5000/any/thing:x"},
		{"OtherPort", "127.0.0.1:5001/any/thing:x", bourse.EPermission, ""},
		{"HostCase", "upper.example.COM/x:1", "", "upper.example.COM/x:1"},
		{"DotDot", "registry.example.com/team/../evil:1", bourse.EInvalidOffer, ""},
		{"EmptyComponent", "registry.example.com/team//app:1", bourse.EInvalidOffer, ""},
		{"Sha512", "registry.example.com/team/app@sha512:" + strings.Repeat("ab", 64), bourse.EInvalidOffer, ""},
		{"ShortDigest", "registry.example.com/team/app@sha256:abc", bourse.EInvalidOffer, ""},
		{"Malformed", "registry.example.com/team/App:1", bourse.EInvalidOffer, ""},
		{"TooLong", "registry.example.com/team/" + strings.Repeat("a", maxRefLen), bourse.EInvalidOffer, ""},
		{"Empty", "", bourse.EInvalidOffer, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := s.parse("test", c.ref)
			if got := bourse.ErrorCode(err); got != c.code {
				t.Fatalf("parse(%q): %v, want code %q", c.ref, err, c.code)
			}
			if err == nil && r.Name() != c.full {
				t.Errorf("parse(%q) = %s, want %s", c.ref, r.Name(), c.full)
			}
		})
	}
	if r, _ := s.parse("test", "127.0.0.1:5000/a:1"); r.Context().Scheme() != "http" {
		t.Errorf("an Insecure registry is reached over %s", r.Context().Scheme())
	}
}

// FuzzParse: a reference that parses is fully qualified, named by an
// allowed prefix at a path boundary, with no "." or ".." in its path.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"busybox", "registry.example.com/team/app:1", "registry.example.com/teamevil/x",
		"registry.example.com/team/../x", "127.0.0.1:5000/a@sha256:" + strings.Repeat("0", 64), "docker.io/library/x:y"} {
		f.Add(s)
	}
	s := refStore(f, "registry.example.com/team", "docker.io/library/", "127.0.0.1:5000/")
	f.Fuzz(func(t *testing.T, ref string) {
		r, err := s.parse("fuzz", ref)
		if err != nil {
			if c := bourse.ErrorCode(err); c != bourse.EPermission && c != bourse.EInvalidOffer {
				t.Fatalf("parse(%q): code %q", ref, c)
			}
			return
		}
		repo := repoKey(r.Context())
		ok := false
		for _, a := range s.allowed {
			ok = ok || repo == a || strings.HasPrefix(repo, a+"/")
		}
		if !ok {
			t.Errorf("parse(%q) allowed %s", ref, repo)
		}
		for _, c := range strings.Split(r.Context().RepositoryStr(), "/") {
			if c == "" || c == "." || c == ".." {
				t.Errorf("parse(%q): path %q", ref, r.Context().RepositoryStr())
			}
		}
	})
}
