package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"

	"github.com/bourse/bourse"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// platform is the one platform jobs run on.
var platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// pull is an unpack under way, which other Pulls of its digest wait for.
type pull struct {
	done chan struct{}
	err  error
}

// Resolve says which image ref names now: the sha256 digest of its
// linux/amd64 image manifest (an index's linux/amd64 entry). It checks
// Config.Allowed first. A digest the cache holds is answered without I/O;
// any other reference asks the registry. Pulling repository@digest gets
// exactly that image, from the cache while it holds it.
func (s *Store) Resolve(ctx context.Context, ref string) (string, error) {
	const op = "image.Resolve"
	r, err := s.parse(op, ref)
	if err != nil {
		return "", err
	}
	if d, ok := r.(name.Digest); ok && s.holds(d.DigestStr()) {
		return d.DigestStr(), nil
	}
	b := &budget{op: op, max: s.cfg.MaxCompressed}
	img, err := remote.Image(r, s.remoteOptions(ctx, b)...)
	if err != nil {
		return "", fail(op, b, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fail(op, b, err)
	}
	return d.String(), nil
}

// Pull gets the image ref names ready to run: it checks Config.Allowed,
// resolves a tag, fetches and unpacks the image into the cache unless the
// cache holds it, and hands it out in use until Release. Pulls of one
// digest at once unpack it once.
func (s *Store) Pull(ctx context.Context, ref string) (*Image, error) {
	const op = "image.Pull"
	r, err := s.parse(op, ref)
	if err != nil {
		return nil, err
	}
	if d, ok := r.(name.Digest); ok {
		if img := s.take(r, d.DigestStr()); img != nil {
			return img, nil
		}
	}
	b := &budget{op: op, max: s.cfg.MaxCompressed}
	remoteImg, err := remote.Image(r, s.remoteOptions(ctx, b)...)
	if err != nil {
		return nil, fail(op, b, err)
	}
	h, err := remoteImg.Digest()
	if err != nil {
		return nil, fail(op, b, err)
	}
	digest := h.String()
	for {
		if img := s.take(r, digest); img != nil {
			return img, nil
		}
		s.mu.Lock()
		if p := s.pulls[digest]; p != nil {
			s.mu.Unlock()
			select {
			case <-p.done:
			case <-ctx.Done():
				return nil, fail(op, b, ctx.Err())
			}
			// A Pull whose context ended hands the unpack on to one
			// that is still waiting.
			if p.err != nil && !(isContext(p.err) && ctx.Err() == nil) {
				return nil, p.err
			}
			continue
		}
		p := &pull{done: make(chan struct{})}
		s.pulls[digest] = p
		s.mu.Unlock()

		e, err := s.unpack(ctx, op, r, remoteImg, digest, b)
		s.mu.Lock()
		delete(s.pulls, digest)
		p.err = err
		close(p.done)
		if err != nil {
			s.mu.Unlock()
			return nil, err
		}
		e.used = s.now()
		s.cached[digest] = e
		img := s.lendLocked(r, e)
		gone := s.evictLocked()
		s.mu.Unlock()
		s.remove(gone)
		s.log.Info("image pulled", "ref", img.Ref, "digest", digest, "bytes", e.Bytes, "files", e.Files)
		return img, nil
	}
}

// remoteOptions are go-containerregistry's options for one Resolve or Pull.
func (s *Store) remoteOptions(ctx context.Context, b *budget) []remote.Option {
	base := s.cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithAuthFromKeychain(s.keychain),
		remote.WithTransport(&pullTransport{base: base, insecure: s.insecure, budget: b}),
		remote.WithPlatform(platform),
		remote.WithUserAgent("bourse"),
	}
}

// holds says whether the cache has an image.
func (s *Store) holds(digest string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cached[digest] != nil
}

// take lends the cached image of a digest, or returns nil.
func (s *Store) take(r name.Reference, digest string) *Image {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.cached[digest]
	if e == nil {
		return nil
	}
	return s.lendLocked(r, e)
}

// lendLocked marks e in use by one more Image.
func (s *Store) lendLocked(r name.Reference, e *entry) *Image {
	e.refs++
	e.used = s.now()
	s.touch(e)
	return &Image{Ref: r.Name(), Digest: e.Digest, RootFS: filepath.Join(s.imageDir(e.Digest), rootfsDir),
		Config: e.Config, lease: &lease{}}
}

func isContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// fail turns what went wrong talking to a registry into an error the
// runner can tell the client: the limit passed, the registry refusing or
// unreachable, or what it served not a valid image.
func fail(op string, b *budget, err error) error {
	var be *bourse.Error
	switch {
	case b.exceeded.Load():
		return b.err()
	case errors.As(err, &be):
		return err
	case errors.Is(err, context.DeadlineExceeded):
		return &bourse.Error{Code: bourse.EDeadlineExceeded, Op: op, Message: "the pull took too long", Err: err}
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("%s: %w", op, err)
	}
	var te *transport.Error
	if errors.As(err, &te) {
		code, msg := bourse.EInvalidOffer, "the registry refused the request"
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
			code, msg = bourse.EPermission, "the registry refused access"
		case te.StatusCode == http.StatusNotFound:
			msg = "the registry has no such image"
		case te.StatusCode == http.StatusTooManyRequests || te.StatusCode >= 500:
			code, msg = bourse.EUnavailable, "the registry is unavailable"
		}
		return &bourse.Error{Code: code, Op: op, Field: "image", Message: msg, Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &bourse.Error{Code: bourse.EUnavailable, Op: op, Field: "image", Message: "the registry cannot be reached", Err: err}
	}
	return &bourse.Error{Code: bourse.EInvalidOffer, Op: op, Field: "image", Message: "not a valid image", Err: err}
}
