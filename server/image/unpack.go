package image

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/internal/untar"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// maxConfigBytes bounds an image's config, which is read whole into
// memory; real ones are a few kilobytes, with a long history a few hundred.
const maxConfigBytes = 8 << 20

// unpack checks what the manifest and config say, then unpacks the layers
// in order under tmp/ and renames the whole into images/<hex> once it is
// complete. Whatever fails leaves nothing behind.
func (s *Store) unpack(ctx context.Context, op string, r name.Reference, img v1.Image, digest string, b *budget) (_ *entry, err error) {
	bad := func(format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "image", Message: fmt.Sprintf(format, args...)}
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fail(op, b, err)
	}
	if !m.Config.MediaType.IsConfig() {
		return nil, bad("%s is not a container image (its config is %q)", digest, m.Config.MediaType)
	}
	if m.Config.Size < 0 || m.Config.Size > maxConfigBytes {
		return nil, bad("the image's config declares %d bytes, more than %d", m.Config.Size, maxConfigBytes)
	}
	var declared int64
	for _, l := range m.Layers {
		// Foreign layers come from URLs the manifest names, anywhere
		// on the network rather than from the allowed registry.
		if len(l.URLs) > 0 {
			return nil, bad("layer %s: layers from URLs (foreign layers) are not taken", l.Digest)
		}
		if !l.MediaType.IsLayer() || !l.MediaType.IsDistributable() {
			return nil, bad("layer %s: %q layers are not taken", l.Digest, l.MediaType)
		}
		if l.Size < 0 {
			return nil, bad("layer %s declares a negative size", l.Digest)
		}
		if declared += l.Size; declared > b.max || declared < 0 {
			return nil, b.err()
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fail(op, b, err)
	}
	if (cf.OS != "" && cf.OS != platform.OS) || (cf.Architecture != "" && cf.Architecture != platform.Architecture) {
		return nil, bad("the image is for %s/%s; jobs run on linux/amd64", cf.OS, cf.Architecture)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fail(op, b, err)
	}

	tmp, err := os.MkdirTemp(filepath.Join(s.cfg.CacheDir, tmpDir), strings.TrimPrefix(digest, "sha256:")+"-")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer func() {
		if err != nil {
			s.remove([]string{tmp})
		}
	}()
	u, err := untar.Create(filepath.Join(tmp, rootfsDir), untar.Options{MaxBytes: s.cfg.MaxUnpacked, MaxFiles: s.cfg.MaxFiles,
		Op: op, Field: "image", What: "the image", Whiteouts: true, SkipDevices: true, Log: s.log.With("digest", digest)})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer u.Close()
	for i, l := range layers {
		if err := ctx.Err(); err != nil {
			return nil, fail(op, b, err)
		}
		if err := s.layer(op, u, l, b); err != nil {
			var be *bourse.Error
			if errors.As(err, &be) {
				be.Message = fmt.Sprintf("layer %d of %d: %s", i+1, len(layers), be.Message)
				return nil, err
			}
			return nil, fmt.Errorf("%s: layer %d of %d: %w", op, i+1, len(layers), err)
		}
	}
	e := &entry{meta: meta{Ref: r.Name(), Digest: digest, Bytes: u.Bytes(), Files: u.Files(), Config: ImageConfig{
		Entrypoint: cf.Config.Entrypoint, Cmd: cf.Config.Cmd, Env: cf.Config.Env,
		WorkingDir: cf.Config.WorkingDir, User: cf.Config.User}}}
	if err := s.commit(tmp, e); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return e, nil
}

// layer reads one layer from the registry and applies it.
func (s *Store) layer(op string, u *untar.Root, l v1.Layer, b *budget) error {
	rc, err := l.Compressed()
	if err != nil {
		return fail(op, b, err)
	}
	defer rc.Close()
	src := &source{r: rc}
	err = u.Apply(src)
	if src.err != nil {
		// What the registry sent failed (the network, the digest, the
		// budget), whatever the tar reader made of it.
		return fail(op, b, src.err)
	}
	return err
}

// source remembers the error of the stream it reads, so that a failure
// of the registry is told apart from a bad archive.
type source struct {
	r   io.Reader
	err error
}

func (s *source) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// commit writes the image's meta and renames it into the cache, after
// syncing the filesystem: a complete image named in images/ must stay
// complete across a crash of the machine too.
func (s *Store) commit(tmp string, e *entry) error {
	b, err := json.Marshal(e.meta)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, metaName), b, 0o600); err != nil {
		return err
	}
	if err := syncFS(tmp); err != nil {
		return err
	}
	return os.Rename(tmp, s.imageDir(e.Digest))
}
