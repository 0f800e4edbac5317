package contract

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/bourse/bourse"
)

// MaxImageRef is the longest image reference a job may name, in bytes:
// a 255-byte name, a 128-byte tag and a sha512 digest fit.
const MaxImageRef = 512

// DockerHub is the registry of a reference that names none, as docker
// and every OCI client read "busybox" (docker.io/library/busybox).
const DockerHub = "docker.io"

// ImageRef is a container image reference as a job names it:
// [registry/]repository[:tag][@digest], read as the distribution
// project's reference grammar reads it, so that the exchange, the server
// and the registry client agree on which image and which registry a job
// names. ParseImageRef fills in what a reference leaves out: docker.io for
// the registry, library/ for a one-word docker.io repository, latest for a
// reference with neither tag nor digest.
type ImageRef struct {
	Registry   string // a host, with its port if it has one: "ghcr.io", "127.0.0.1:5000"
	Repository string // "library/busybox", "acme/train"
	Tag        string // "latest"; "" where a digest alone names the image
	Digest     string // "sha256:<64 hex>"; "" for none
}

var (
	// pathComponent is the grammar's: lower-case letters and digits, one
	// separator (., _, __ or dashes) between runs of them.
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	domainLabel   = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?$`)
	tagForm       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	// Registries name content by sha256 (and, rarely, sha512): a digest of
	// another algorithm could not be checked against what is pulled.
	digestForm = regexp.MustCompile(`^(?:sha256:[a-f0-9]{64}|sha512:[a-f0-9]{128})$`)
)

// ParseImageRef reads an image reference, or says what is wrong with it
// as a *bourse.Error with code EInvalidOffer and field "job.image".
func ParseImageRef(s string) (ImageRef, error) {
	bad := func(format string, args ...any) (ImageRef, error) {
		return ImageRef{}, fail(bourse.EInvalidOffer, "contract.ParseImageRef", "job.image", "%q: "+format, append([]any{s}, args...)...)
	}
	if s == "" || len(s) > MaxImageRef {
		return bad("want 1..%d bytes", MaxImageRef)
	}
	var r ImageRef
	rest := s
	if name, digest, ok := strings.Cut(rest, "@"); ok {
		if !digestForm.MatchString(digest) {
			return bad("the digest %q is not sha256: and 64 lower-case hex digits (or sha512: and 128)", digest)
		}
		r.Digest, rest = digest, name
	}
	// A tag follows the last colon after the last slash: a colon before
	// it is a registry's port.
	if i := strings.LastIndexByte(rest, ':'); i > strings.LastIndexByte(rest, '/') {
		if !tagForm.MatchString(rest[i+1:]) {
			return bad("the tag %q is not 1..128 letters, digits, _, . or - (not starting with . or -)", rest[i+1:])
		}
		r.Tag, rest = rest[i+1:], rest[:i]
	}
	first, path, hasSlash := strings.Cut(rest, "/")
	if hasSlash && isRegistry(first) {
		if why := checkRegistry(first); why != "" {
			return bad("the registry %q %s", first, why)
		}
		r.Registry = first
	} else {
		r.Registry, path = DockerHub, rest
	}
	if r.Registry == "index.docker.io" || r.Registry == "registry-1.docker.io" {
		r.Registry = DockerHub
	}
	if r.Registry == DockerHub && !strings.Contains(path, "/") {
		path = "library/" + path
	}
	for _, c := range strings.Split(path, "/") {
		if !pathComponent.MatchString(c) {
			return bad("the repository's part %q is not lower-case letters and digits with ., _, __ or - between them", c)
		}
	}
	if n := len(r.Registry) + 1 + len(path); n > 255 {
		return bad("the name is %d bytes; at most 255", n)
	}
	r.Repository = path
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}
	return r, nil
}

// isRegistry says whether the first part of a reference names a
// registry, as the grammar decides: it has a dot or a port, or is
// localhost, or has a capital letter (which no repository may).
func isRegistry(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost" || strings.ToLower(s) != s
}

// checkRegistry says what is wrong with a registry host[:port], or "".
func checkRegistry(s string) string {
	host, port, hasPort := strings.Cut(s, ":")
	if hasPort {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return "has a port that is not 1..65535"
		}
	}
	for _, label := range strings.Split(host, ".") {
		if !domainLabel.MatchString(label) {
			return "is not a host name, an IPv4 address or localhost, with an optional port"
		}
	}
	return ""
}

// Name is the registry and repository: what the image is, whatever its
// version ("docker.io/library/busybox").
func (r ImageRef) Name() string { return r.Registry + "/" + r.Repository }

// String is the reference in full, as ParseImageRef reads it back:
// registry/repository[:tag][@digest].
func (r ImageRef) String() string {
	s := r.Name()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// GoString keeps a reference readable in test failures.
func (r ImageRef) GoString() string { return fmt.Sprintf("contract.ImageRef(%q)", r.String()) }

// maxImageSource is the longest source of Images.Allowed, in bytes.
const maxImageSource = 255

// ParseImageSource reads a source of Images.Allowed and returns it as
// references name it ("index.docker.io/library" is docker.io/library),
// or says why it is not one (EInvalid).
func ParseImageSource(s string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fail(bourse.EInvalid, "contract.ParseImageSource", "", "%q: "+format, append([]any{s}, args...)...)
	}
	if s == "" || len(s) > maxImageSource {
		return bad("want 1..%d bytes", maxImageSource)
	}
	// Read as the name of an image two levels below it, so that the
	// grammar that reads a job's reference reads the source too (a
	// one-word docker.io name would gain library/).
	const below = "/x/y"
	ref, err := ParseImageRef(s + below)
	host, _, _ := strings.Cut(s, "/")
	switch {
	case err != nil:
		return bad("not a registry with an optional repository prefix (ghcr.io, docker.io/library, 127.0.0.1:5000/tests)")
	case ref.Tag != "latest" || ref.Digest != "":
		return bad("a source names no tag or digest")
	case ref.Registry != host && !(ref.Registry == DockerHub && strings.HasSuffix(host, ".docker.io")):
		return bad("start with the registry's host (docker.io/%s for Docker Hub's)", s)
	}
	return strings.TrimSuffix(ref.Name(), below), nil
}
