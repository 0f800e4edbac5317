package image

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/bourse/bourse"
	"github.com/google/go-containerregistry/pkg/name"
)

// pathComponent is one component of a repository's path, as the
// distribution spec's grammar has it. go-containerregistry checks only the
// characters, so "team/../evil" would pass its parser and reach the
// registry as a path that it may clean into another repository than the
// one the operator allowed.
var pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)

// sha256Digest is the one digest form taken: the cache is named by it.
var sha256Digest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// maxRefLen bounds a reference; a registry's host and a repository of 255
// characters, a tag or a digest fit well within it.
const maxRefLen = 512

// allowEntry normalises one of Config.Allowed: a registry ("127.0.0.1:5000/")
// or a repository prefix ("registry.example.com/team/"), written the way
// references are compared: lower-case host, Docker Hub as index.docker.io
// (whose official images are under docker.io/library/).
func allowEntry(e string) (string, error) {
	e = strings.TrimSuffix(strings.TrimSpace(e), "/")
	host, rest, _ := strings.Cut(e, "/")
	// A first component without a dot or a port would be read as a Docker
	// Hub repository ("busybox"): the operator says which registry.
	if host != "localhost" && !strings.ContainsAny(host, ".:") {
		return "", fmt.Errorf("%q: name the registry, e.g. docker.io/library/busybox or 127.0.0.1:5000/", e)
	}
	reg, err := name.NewRegistry(host)
	if err != nil {
		return "", fmt.Errorf("%q: %w", e, err)
	}
	if rest == "" {
		return strings.ToLower(reg.Name()), nil
	}
	// The path is a prefix, taken as written: name.NewRepository would
	// make Docker Hub's "docker.io/someone" "library/someone".
	if err := checkPath(rest); err != nil {
		return "", fmt.Errorf("%q: %w", e, err)
	}
	return strings.ToLower(reg.Name()) + "/" + rest, nil
}

// repoKey is how a repository is compared with the allowed prefixes.
func repoKey(r name.Repository) string {
	return strings.ToLower(r.RegistryStr()) + "/" + r.RepositoryStr()
}

// allows says whether one of the normalised prefixes covers a repository:
// the prefix whole, or followed by a "/", so that registry.example.com/team
// covers registry.example.com/team/x and not registry.example.com/teamevil.
func allows(allowed []string, repo string) bool {
	for _, a := range allowed {
		if repo == a || strings.HasPrefix(repo, a+"/") {
			return true
		}
	}
	return false
}

// checkPath refuses a repository path with a component outside the
// distribution grammar ("..", ".", an empty one).
func checkPath(p string) error {
	for c := range strings.SplitSeq(p, "/") {
		if !pathComponent.MatchString(c) {
			return fmt.Errorf("repository path component %q is not allowed", c)
		}
	}
	return nil
}

// parse reads a reference, fully qualified ("busybox" is
// index.docker.io/library/busybox:latest), and checks it against
// Config.Allowed: the check every Resolve and Pull makes before any I/O,
// cache included.
func (s *Store) parse(op, ref string) (name.Reference, error) {
	bad := func(format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "image", Message: fmt.Sprintf(format, args...)}
	}
	if len(ref) > maxRefLen {
		return nil, bad("the image reference is longer than %d bytes", maxRefLen)
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, bad("%q is not an image reference: %v", ref, err)
	}
	if s.insecure[strings.ToLower(r.Context().RegistryStr())] {
		// Parsed again so that go-containerregistry speaks plain HTTP
		// to it; the transport keeps every other registry on HTTPS.
		if r, err = name.ParseReference(ref, name.Insecure); err != nil {
			return nil, bad("%q is not an image reference: %v", ref, err)
		}
	}
	if err := checkPath(r.Context().RepositoryStr()); err != nil {
		return nil, bad("%q: %v", ref, err)
	}
	if d, ok := r.(name.Digest); ok && !sha256Digest.MatchString(d.DigestStr()) {
		return nil, bad("%q: only sha256 digests are taken", ref)
	}
	if repo := repoKey(r.Context()); !allows(s.allowed, repo) {
		return nil, &bourse.Error{Code: bourse.EPermission, Op: op, Field: "image",
			Message: fmt.Sprintf("%s: this server does not pull from that registry or repository", repo)}
	}
	return r, nil
}
