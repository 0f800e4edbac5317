package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bourse/bourse/server/container"
	"github.com/bourse/bourse/server/image"
)

// openImages opens package server/image's Store for a container runner:
// images pulled from the allowed sources by digest into the cache, and
// unpacked so that no archive climbs out of its root.
func openImages(sc container.StoreConfig, log *slog.Logger) (container.Images, error) {
	st, err := image.Open(image.Config{Allowed: sc.Allowed, CacheDir: sc.CacheDir, MaxCacheBytes: sc.CacheBytes,
		MaxCompressed: sc.MaxBytes, MaxUnpacked: sc.MaxUnpackedBytes, Credentials: sc.CredentialsFile, Insecure: sc.Insecure, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("image store: %w", err)
	}
	return images{st}, nil
}

// images is an image.Store as the container runner's Images.
type images struct{ s *image.Store }

func (i images) Pull(ctx context.Context, ref string) (*container.Image, error) {
	img, err := i.s.Pull(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &container.Image{Ref: img.Ref, Digest: img.Digest, RootFS: img.RootFS, Config: container.ImageConfig(img.Config), Handle: img}, nil
}

func (i images) Release(img *container.Image) {
	if h, ok := img.Handle.(*image.Image); ok {
		i.s.Release(h)
	}
}
