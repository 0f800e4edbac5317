package container

import "context"

// Images pulls the images jobs name: package server/image's Store, through
// the adapter cmd/bourse wires, or a test's. Declared here, where it is
// used, so that the runner does not depend on how images are fetched.
type Images interface {
	// Pull fetches the image ref names from a source the operator
	// allows, resolved to a digest, and unpacks it, or says why not: a
	// *bourse.Error where the cause is the reference (not allowed,
	// unknown, too large), which the job's client is told.
	Pull(ctx context.Context, ref string) (*Image, error)
	// Release says that a job no longer uses the image, which the store
	// may then evict.
	Release(img *Image)
}

// Image is a pulled image as the runner uses it.
type Image struct {
	Ref    string // the reference as the job named it
	Digest string // what it resolved to, sha256:…
	// RootFS is the unpacked root file system: a folder the runner
	// mounts read-only beneath each container and never writes.
	RootFS string
	Config ImageConfig
	// Handle is the store's own value for the image, for its Release.
	Handle any
}

// ImageConfig is what of an image's configuration a container takes.
type ImageConfig struct {
	Entrypoint, Cmd, Env []string
	WorkingDir           string
	// User is the image's USER, which the runner ignores: a job runs as
	// a job user of the pool, never as the image says.
	User string
}

// StoreConfig is the image store's configuration as bourse server's
// reads it (runner.images), which cmd/bourse hands to the store it opens.
// The runner itself reads only Allowed and the bounds, which its hello
// says (protocol.Images).
type StoreConfig struct {
	Allowed          []string // sources: registries, or registries with a repository prefix
	CacheDir         string   // where pulled images are kept, by digest
	CacheBytes       int64    // the cache's size, past which the least recently used go
	MaxBytes         int64    // the largest image pulled, compressed
	MaxUnpackedBytes int64    // the largest image unpacked
	CredentialsFile  string   // registry credentials (a docker config.json), never the offer's
	Insecure         []string // registries reached over plain HTTP
}
