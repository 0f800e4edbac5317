package protocol

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Limits of Images.
const (
	MaxImageSources = 64
	maxImageSource  = 255
)

// Images says which container images a container runner pulls, and how
// large: what a client needs to know to name one it will run. The server
// pulls only from these sources, with its own credentials; a job names
// an image, never where its credentials are.
type Images struct {
	// Allowed are the sources of the images it pulls: a registry
	// ("ghcr.io", "127.0.0.1:5000": any image there), or a registry and a
	// repository prefix ("docker.io/library", "ghcr.io/acme": that
	// repository and those below it, ghcr.io/acme/train but not
	// ghcr.io/acmecorp/x). Each starts with its registry's host, as a
	// job's reference reads once filled in (ParseImageRef): busybox is
	// docker.io/library/busybox.
	Allowed []string `json:"allowed"`
	// MaxBytes bounds an image as pulled (its layers, compressed) and
	// MaxUnpackedBytes as unpacked on the server's disk; 0 where the
	// server says no bound.
	MaxBytes         int64 `json:"max_bytes,omitempty"`
	MaxUnpackedBytes int64 `json:"max_unpacked_bytes,omitempty"`
}

// Check checks what Images may hold: at most MaxImageSources sources,
// each a registry host and an optional repository prefix, and bounds
// that are not negative.
func (im *Images) Check() error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "protocol.Images", Field: "runs.images." + field, Message: fmt.Sprintf(format, args...)}
	}
	if len(im.Allowed) > MaxImageSources {
		return bad("allowed", "%d sources; at most %d", len(im.Allowed), MaxImageSources)
	}
	for i, s := range im.Allowed {
		if _, err := ParseImageSource(s); err != nil {
			return bad(fmt.Sprintf("allowed[%d]", i), "%s", bourse.ErrorMessage(err))
		}
	}
	if im.MaxBytes < 0 || im.MaxUnpackedBytes < 0 {
		return bad("max_bytes", "negative")
	}
	return nil
}

// ParseImageSource reads a source of Images.Allowed and returns it as
// references name it ("index.docker.io/library" is docker.io/library),
// or says why it is not one (EInvalid).
func ParseImageSource(s string) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", &bourse.Error{Code: bourse.EInvalid, Op: "protocol.ParseImageSource", Message: fmt.Sprintf("%q: "+format, append([]any{s}, args...)...)}
	}
	if s == "" || len(s) > maxImageSource {
		return bad("want 1..%d bytes", maxImageSource)
	}
	// Read as the name of an image two levels below it, so that the
	// grammar that reads a job's reference reads the source too (a
	// one-word docker.io name would gain library/).
	const below = "/x/y"
	ref, err := contract.ParseImageRef(s + below)
	host, _, _ := strings.Cut(s, "/")
	switch {
	case err != nil:
		return bad("not a registry with an optional repository prefix (ghcr.io, docker.io/library, 127.0.0.1:5000/tests)")
	case ref.Tag != "latest" || ref.Digest != "":
		return bad("a source names no tag or digest")
	case ref.Registry != host && !(ref.Registry == contract.DockerHub && strings.HasSuffix(host, ".docker.io")):
		return bad("start with the registry's host (docker.io/%s for Docker Hub's)", s)
	}
	return strings.TrimSuffix(ref.Name(), below), nil
}

// allows says whether the image ref names is one of the sources', and if
// not, why.
func (im *Images) allows(image string) (bool, string) {
	ref, err := contract.ParseImageRef(image)
	if err != nil {
		return false, bourse.ErrorMessage(err)
	}
	var sources []string
	if im != nil {
		sources = im.Allowed
	}
	name := ref.Name()
	for _, s := range sources {
		src, err := ParseImageSource(s)
		if err == nil && (name == src || strings.HasPrefix(name, src+"/")) {
			return true, ""
		}
	}
	if len(sources) == 0 {
		return false, fmt.Sprintf("%s is not an image this server pulls: it pulls none", ref)
	}
	return false, fmt.Sprintf("%s is not an image this server pulls: it pulls from %s", ref, strings.Join(sources, ", "))
}
