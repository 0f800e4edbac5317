// Package image gets a container image's root filesystem ready for the
// container runner: it pulls images from the registries the operator
// allows, checks them against their digests and the server's limits,
// unpacks their layers safely into a cache kept by digest, and hands out
// a directory to mount read-only.
//
// The API is the one the runner was promised, with Close added (to let
// go of the cache directory):
//
//	s, err := image.Open(image.Config{Allowed: …, CacheDir: …})
//	digest, err := s.Resolve(ctx, "registry.example.com/team/app:1") // before the job starts
//	img, err := s.Pull(ctx, "registry.example.com/team/app@"+digest)  // img.RootFS, img.Config
//	…                                                                 // run the container
//	s.Release(img)                                                    // once the container is gone
//
// Go-containerregistry (github.com/google/go-containerregistry) speaks
// to the registries; this package decides what it may ask and what it
// takes.
//
// # References and registries
//
// A reference is registry/repository:tag or registry/repository@sha256:…;
// a short Docker Hub name ("busybox") is index.docker.io/library/busybox.
// It is checked against Config.Allowed before anything else, the cache
// included: an entry allows the repository it names and those below it
// at a "/" boundary ("registry.example.com/team" allows
// registry.example.com/team/app, not registry.example.com/teamevil/app); a
// registry alone ("127.0.0.1:5000/") allows all of it. A repository path
// with "..", "." or an empty component is refused whatever is allowed:
// the registry might clean it into another repository.
//
// Resolve answers with the digest of the linux/amd64 image manifest (from
// an index, its linux/amd64 entry), the image that runs; pulling
// repository@that digest gets exactly that image. The cache is kept by
// it, and a digest it holds is answered without asking the registry.
// go-containerregistry checks that a manifest fetched by digest has that
// digest, and that each layer has the digest the manifest names when its
// stream ends: the unpacker reads every layer to its end, and a layer
// that fails the check is refused with all that was unpacked of it.
//
// Registries are reached over HTTPS, but those listed in Config.Insecure,
// over plain HTTP. Credentials come from Config.Credentials (a Docker
// config.json) and the environment, never from an offer. Layers that a
// manifest says to fetch from URLs (foreign layers) are refused: the URLs
// could point anywhere.
//
// # Limits
//
// Per image: MaxCompressed bytes read from registries (manifests, config
// and layers, counted as they arrive; the manifest's declared sizes are
// checked first, and an image over the limit by them fetches no layer);
// MaxUnpacked bytes, the sizes the layers' tar headers declare for every
// entry with data, counted before the data is read, so that a bomb (a
// huge or sparse size) is refused at its header; MaxFiles entries. Past
// any of them the pull is refused and what it unpacked is removed. The
// cache keeps at most MaxCacheBytes of images not in use, evicting the
// least recently used first; images in use stay.
//
// # Unpacking
//
// Layers are applied in order into a directory under CacheDir/tmp and
// renamed into CacheDir/images/<hex> once complete, after the filesystem
// is synced: the cache holds complete images or none, and Open removes
// whatever a crash left under tmp. Pulls of one digest at once unpack it
// once; one whose context ends hands the unpack on to one still waiting.
//
// Package internal/untar unpacks each layer, by its rules (every path
// resolved in the image's root as under chroot, nothing written through
// a symlink, no setuid bits, no extended attributes), with the image's
// choices: whiteouts applied (".wh.name" removes name from the layers
// below, ".wh..wh..opq" hides what the layers below put in its
// directory); device nodes and fifos left out, with a log line, and the
// image taken (the runtime makes the container's /dev, and base images
// built from tarballs carry /dev entries that would be harmless: refusing
// them would refuse those images for nothing); everything owned by the
// user that pulled (root, for the agent), readable by all, so that
// whichever user the runner maps the job to reads the image and writes
// none of it; the root is mounted read-only besides.
//
// # Errors
//
// Every failure of Resolve or Pull is a *bourse.Error the runner can tell
// the client: EPermission for a registry or repository not allowed, or a
// registry refusing access; EInvalidOffer for a malformed reference, an
// image over a limit, a digest that does not match, an image not for
// linux/amd64, a bad layer, or no such image; EUnavailable for a registry
// that cannot be reached or answers 5xx or 429; EDeadlineExceeded when the
// context's deadline passes. The host's own trouble (a full disk) is an
// error without a code (EInternal).
//
// Image.Config.User is the image's USER as written, root included: the
// runner decides which user runs the job, never root on the host.
package image
