package protocol

import (
	"fmt"
	"strings"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// Runs is what a server runs as its hello and heartbeats carry it: the
// market's noun, with its rule (what a server takes, Takes and Refuses),
// is contract.Runs; the wire adds Check, that it holds nothing of
// insane length.
type Runs contract.Runs

// The parts of Runs travel as contract defines them.
type (
	RunnerKind = contract.RunnerKind
	Images     = contract.Images
	Files      = contract.FilesLimit
)

// The runner kinds (contract.RunnerKind).
const (
	RunnerSynthetic = contract.RunnerSynthetic
	RunnerProcess   = contract.RunnerProcess
	RunnerContainer = contract.RunnerContainer
)

// Limits of Runs.
const (
	MaxPrograms     = 256
	maxProgram      = 1024
	maxKind         = 32
	MaxImageSources = 64
)

// Check checks what Runs may hold: a runner kind, a meter and programs of
// sane lengths. A kind this version does not know passes: a newer server's
// hello is understood, and contract.Runs.Takes offers such a server
// nothing.
func (r *Runs) Check() error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "protocol.Runs", Field: "runs." + field, Message: fmt.Sprintf(format, args...)}
	}
	if r.Runner == "" || len(r.Runner) > maxKind {
		return bad("runner", "want 1..%d characters", maxKind)
	}
	if len(r.Meter) > maxKind {
		return bad("meter", "longer than %d characters", maxKind)
	}
	if len(r.Programs) > MaxPrograms {
		return bad("programs", "%d programs; at most %d", len(r.Programs), MaxPrograms)
	}
	for i, p := range r.Programs {
		if p == "" || len(p) > maxProgram || strings.ContainsRune(p, 0) {
			return bad(fmt.Sprintf("programs[%d]", i), "want 1..%d characters, no NUL", maxProgram)
		}
	}
	if r.Files != nil && r.Files.MaxBytes < 1 {
		return bad("files.max_bytes", "%d; want more than 0", r.Files.MaxBytes)
	}
	if r.Images != nil {
		return checkImages(r.Images)
	}
	return nil
}

// checkImages checks what Images may hold: at most MaxImageSources
// sources, each a registry host and an optional repository prefix
// (contract.ParseImageSource), and bounds that are not negative.
func checkImages(im *Images) error {
	bad := func(field, format string, args ...any) error {
		return &bourse.Error{Code: bourse.EInvalid, Op: "protocol.Images", Field: "runs.images." + field, Message: fmt.Sprintf(format, args...)}
	}
	if len(im.Allowed) > MaxImageSources {
		return bad("allowed", "%d sources; at most %d", len(im.Allowed), MaxImageSources)
	}
	for i, s := range im.Allowed {
		if _, err := contract.ParseImageSource(s); err != nil {
			return bad(fmt.Sprintf("allowed[%d]", i), "%s", bourse.ErrorMessage(err))
		}
	}
	if im.MaxBytes < 0 || im.MaxUnpackedBytes < 0 {
		return bad("max_bytes", "negative")
	}
	return nil
}
