package main

import (
	"fmt"
	"log/slog"

	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/server"
	"github.com/bourse/bourse/server/container"
)

// containerSettings are the container runner's keys of runner, beside
// those it shares with the process runner (env, allow_env, output_dir,
// output_cap, grace, stopped_ttl, max_frozen, the job users).
type containerSettings struct {
	// Runtime is the OCI runtime (runc, crun, or a path); empty for runc.
	Runtime string `yaml:"runtime"`
	// Images are the image store's settings: where it pulls from, its
	// cache, its bounds, its credentials.
	Images struct {
		Allowed          []string `yaml:"allowed"`
		CacheDir         string   `yaml:"cache_dir"`
		CacheBytes       int64    `yaml:"cache_bytes"`
		MaxBytes         int64    `yaml:"max_bytes"`
		MaxUnpackedBytes int64    `yaml:"max_unpacked_bytes"`
		CredentialsFile  string   `yaml:"credentials_file"`
		// Insecure are registries reached over plain HTTP (a registry
		// on the node itself, for tests); every other gets HTTPS.
		Insecure []string `yaml:"insecure"`
	} `yaml:"images"`
	Pids         int64    `yaml:"pids"`
	MemoryPerGPU int64    `yaml:"memory_per_gpu"`
	TmpBytes     int64    `yaml:"tmp_bytes"`
	Network      string   `yaml:"network"` // none (the default) or host
	StateDir     string   `yaml:"state_dir"`
	CDIDirs      []string `yaml:"cdi_dirs"`
}

// imageStore opens the store a container runner pulls images through.
type imageStore func(container.StoreConfig, *slog.Logger) (container.Images, error)

// storeConfig is runner.images as the image store takes it.
func (c *serverConfig) storeConfig() container.StoreConfig {
	im := c.Runner.Images
	return container.StoreConfig{Allowed: im.Allowed, CacheDir: im.CacheDir, CacheBytes: im.CacheBytes, MaxBytes: im.MaxBytes,
		MaxUnpackedBytes: im.MaxUnpackedBytes, CredentialsFile: im.CredentialsFile, Insecure: im.Insecure}
}

// containerRunner makes the container runner of the configuration, on
// the image store open opens.
func (c *serverConfig) containerRunner(open imageStore, users []string, meter server.Meter, noMeter string, devices map[int]string, log *slog.Logger) (*container.Runner, error) {
	sc := c.storeConfig()
	images, err := open(sc, log)
	if err != nil {
		return nil, fmt.Errorf("server config: runner.images: %w", err)
	}
	r := c.Runner
	cr, err := container.New(container.Config{
		Runtime: r.Runtime, Images: images,
		Sources: protocol.Images{Allowed: sc.Allowed, MaxBytes: sc.MaxBytes, MaxUnpackedBytes: sc.MaxUnpackedBytes},
		Users:   users, Env: r.Env, AllowEnv: r.AllowEnv, Devices: devices, CDIDirs: r.CDIDirs,
		Pids: r.Pids, MemoryPerGPU: r.MemoryPerGPU, TmpBytes: r.TmpBytes, Network: r.Network, StateDir: r.StateDir,
		OutputDir: r.OutputDir, OutputCap: r.OutputCap, Grace: r.Grace, StoppedTTL: r.StoppedTTL, MaxFrozen: r.MaxFrozen, Meter: meter, NoMeter: noMeter, Logger: log,
		FilesBytes: r.FilesBytes, FilesCount: r.FilesCount,
	})
	if err != nil {
		return nil, fmt.Errorf("server config: runner: %w", err)
	}
	return cr, nil
}
