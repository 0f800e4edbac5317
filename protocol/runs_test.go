package protocol_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// TestHelloRuns: a hello says what its server runs, strictly decoded; a
// hello without it (a server older than runs) is still taken.
func TestHelloRuns(t *testing.T) {
	hello := func(runs string) string {
		h := `{"currency":"CRED","gpus":[{"index":0,"model":"H100","memory_mib":81559}],"free":1`
		if runs != "" {
			h += `,"runs":` + runs
		}
		return h + `,"at":"2026-11-21T12:00:00Z"}`
	}
	h, err := protocol.DecodeHello([]byte(hello(`{"runner":"process","meter":"nvml","programs":["/usr/bin/python3","python3"]}`)))
	require.NoError(t, err)
	require.NotNil(t, h.Runs)
	assert.Equal(t, protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterNVML, Programs: []string{"/usr/bin/python3", "python3"}}, *h.Runs)

	h, err = protocol.DecodeHello([]byte(hello("")))
	require.NoError(t, err, "an older server's hello")
	assert.Nil(t, h.Runs)

	for name, runs := range map[string]string{
		"UnknownKey":   `{"runner":"process","gpus":2}`,
		"NoRunner":     `{"meter":"nvml"}`,
		"EmptyProgram": `{"runner":"process","programs":[""]}`,
		"NUL":          `{"runner":"process","programs":["a\u0000b"]}`,
		"LongRunner":   `{"runner":"` + strings.Repeat("x", 33) + `"}`,
		"TooMany":      `{"runner":"process","programs":[` + strings.TrimSuffix(strings.Repeat(`"p",`, protocol.MaxPrograms+1), ",") + `]}`,
	} {
		_, err := protocol.DecodeHello([]byte(hello(runs)))
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%s: %v", name, err)
	}
	h, err = protocol.DecodeHello([]byte(hello(`null`)))
	require.NoError(t, err)
	assert.Nil(t, h.Runs, "null is absent")
	_, err = protocol.DecodeHello([]byte(hello(`{"runner":"vm"}`)))
	assert.NoError(t, err, "a runner this version does not know is understood")

	h, err = protocol.DecodeHello([]byte(hello(`{"runner":"process","files":{"max_bytes":1073741824}}`)))
	require.NoError(t, err)
	assert.Equal(t, &protocol.Files{MaxBytes: 1 << 30}, h.Runs.Files, "a server that takes files says how large")

	h, err = protocol.DecodeHello([]byte(hello(`{"runner":"container","meter":"nvml","images":{"allowed":["ghcr.io/acme","127.0.0.1:5000"],"max_bytes":1073741824,"max_unpacked_bytes":4294967296}}`)))
	require.NoError(t, err)
	assert.Equal(t, &protocol.Images{Allowed: []string{"ghcr.io/acme", "127.0.0.1:5000"}, MaxBytes: 1 << 30, MaxUnpackedBytes: 4 << 30}, h.Runs.Images)
	for name, runs := range map[string]string{
		"UnknownImagesKey": `{"runner":"container","images":{"allowed":[],"registries":[]}}`,
		"NoRegistryHost":   `{"runner":"container","images":{"allowed":["acme/train"]}}`,
		"Tagged":           `{"runner":"container","images":{"allowed":["ghcr.io/acme:v1"]}}`,
		"Negative":         `{"runner":"container","images":{"allowed":["ghcr.io"],"max_bytes":-1}}`,
		"TooManySources":   `{"runner":"container","images":{"allowed":[` + strings.TrimSuffix(strings.Repeat(`"ghcr.io",`, protocol.MaxImageSources+1), ",") + `]}}`,
		"FilesOfNoBytes":   `{"runner":"process","files":{"max_bytes":0}}`,
		"UnknownFilesKey":  `{"runner":"process","files":{"max_bytes":1,"max_files":2}}`,
	} {
		_, err := protocol.DecodeHello([]byte(hello(runs)))
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%s: %v", name, err)
	}
}

// TestRunsTakes is the rule both the exchange and the server apply.
func TestRunsTakes(t *testing.T) {
	program := &contract.JobSpec{Command: "/usr/bin/python3"}
	byName := &contract.JobSpec{Command: "python3"}
	profile := &contract.JobSpec{Profile: &contract.Profile{}}
	synthetic := &protocol.Runs{Runner: protocol.RunnerSynthetic, Meter: contract.MeterSynthetic}
	process := &protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterNVML, Programs: []string{"/usr/bin/python3"}}
	unknown := &protocol.Runs{Runner: "vm"}
	image := &contract.JobSpec{Image: "ghcr.io/acme/train:v1"}
	imageAndCommand := &contract.JobSpec{Image: "ghcr.io/acme/train@sha256:" + strings.Repeat("0", 64), Command: "/usr/bin/python3"}
	hub := &contract.JobSpec{Image: "busybox"}
	elsewhere := &contract.JobSpec{Image: "ghcr.io/acmecorp/x"}
	container := &protocol.Runs{Runner: protocol.RunnerContainer, Meter: contract.MeterNVML,
		Images: &protocol.Images{Allowed: []string{"ghcr.io/acme", "docker.io/library"}}}
	pullsNone := &protocol.Runs{Runner: protocol.RunnerContainer, Meter: contract.MeterNVML}
	for _, tt := range []struct {
		runs *protocol.Runs
		job  *contract.JobSpec
		code bourse.Code // "" where it takes it
		says string
	}{
		{synthetic, profile, "", ""},
		{synthetic, nil, "", ""},
		{synthetic, program, bourse.EJobUnsupported, "runs synthetic jobs only"},
		{process, program, "", ""},
		{process, byName, bourse.EPermission, `"python3" is not a program this server runs: it runs /usr/bin/python3 (name one exactly as listed)`},
		{process, profile, bourse.EJobUnsupported, "the offer must name a command"},
		{process, nil, bourse.EJobUnsupported, "the offer must name a command"},
		{nil, profile, "", ""},
		{nil, program, bourse.EJobUnsupported, "does not say what it runs"},
		{unknown, profile, bourse.EJobUnsupported, `a kind this exchange does not know ("vm")`},
		{container, image, "", ""},
		{container, imageAndCommand, "", ""},
		{container, hub, "", ""},
		{container, elsewhere, bourse.EJobUnsupported, "ghcr.io/acmecorp/x:latest is not an image this server pulls: it pulls from ghcr.io/acme, docker.io/library"},
		{container, program, bourse.EJobUnsupported, "runs container images only: the offer must name an image"},
		{container, profile, bourse.EJobUnsupported, "runs container images only"},
		{container, nil, bourse.EJobUnsupported, "runs container images only"},
		{pullsNone, image, bourse.EJobUnsupported, "it pulls none"},
		{synthetic, image, bourse.EJobUnsupported, "this server runs synthetic jobs only, not container images, so ghcr.io/acme/train:v1 would not run here"},
		{process, imageAndCommand, bourse.EJobUnsupported, "this server runs the programs it lists, not container images"},
		{nil, image, bourse.EJobUnsupported, "no program and no image"},
	} {
		name := fmt.Sprintf("%v/%v", tt.runs, tt.job)
		err := tt.runs.Refuses(tt.job)
		assert.Equal(t, tt.code == "", tt.runs.Takes(tt.job), name)
		assert.Equal(t, tt.code, bourse.ErrorCode(err), name)
		if tt.says != "" {
			assert.Contains(t, bourse.ErrorMessage(err), tt.says, name)
		}
	}
	withFiles := func(j contract.JobSpec, bytes int64) *contract.JobSpec {
		j.Files = &contract.Files{Digest: "sha256:" + strings.Repeat("0", 64), Bytes: bytes}
		return &j
	}
	takesFiles := func(r protocol.Runs) *protocol.Runs {
		r.Files = &protocol.Files{MaxBytes: 1 << 20}
		return &r
	}
	for _, tt := range []struct {
		runs *protocol.Runs
		job  *contract.JobSpec
		code bourse.Code
		says string
	}{
		{takesFiles(*process), withFiles(*program, 1<<20), "", ""},
		{takesFiles(*container), withFiles(*image, 1), "", ""},
		{process, withFiles(*program, 1), bourse.EJobUnsupported, "this server takes no files"},
		{container, withFiles(*image, 1), bourse.EJobUnsupported, "this server takes no files"},
		{takesFiles(*process), withFiles(*program, 1<<20+1), bourse.EJobUnsupported, "the files are 1048577 bytes; this server takes at most 1048576"},
		{takesFiles(*synthetic), withFiles(*program, 1), bourse.EJobUnsupported, "runs synthetic jobs only"},
		{takesFiles(*process), withFiles(*byName, 1), bourse.EPermission, "is not a program this server runs"},
		{nil, withFiles(*program, 1), bourse.EJobUnsupported, "does not say what it runs"},
	} {
		name := fmt.Sprintf("%v/%v", tt.runs, tt.job.Files)
		err := tt.runs.Refuses(tt.job)
		assert.Equal(t, tt.code == "", tt.runs.Takes(tt.job), name)
		assert.Equal(t, tt.code, bourse.ErrorCode(err), name)
		if tt.code == bourse.EJobUnsupported && strings.Contains(tt.says, "files") {
			assert.Equal(t, "job.files", errorField(err), name)
		}
		if tt.says != "" {
			assert.Contains(t, bourse.ErrorMessage(err), tt.says, name)
		}
	}
	long := make([]string, 40)
	for i := range long {
		long[i] = fmt.Sprintf("/opt/p%02d", i)
	}
	msg := protocol.NotAllowed("x", long)
	assert.Contains(t, msg, "/opt/p15 and 24 more", "a long list is cut")
	assert.NotContains(t, msg, "/opt/p16")
}

// TestHelloModelsBounded: one server may say it has at most
// MaxServerModels GPU models, folded as routing folds them: each is a line
// of market data every reader receives.
func TestHelloModelsBounded(t *testing.T) {
	hello := func(models ...string) protocol.Hello {
		h := protocol.Hello{Currency: "CRED", Free: 0}
		for i, m := range models {
			h.GPUs = append(h.GPUs, contract.GPU{Index: i, Model: m, MemoryMiB: 81920})
		}
		return h
	}
	var many []string
	for i := range protocol.MaxServerModels {
		many = append(many, fmt.Sprintf("GPU-%d", i))
	}
	require.NoError(t, hello(many...).Check(), "as many models as allowed")
	require.NoError(t, hello(append(many, "gpu-0", "Gpu-1")...).Check(), "models folded: the same two again")
	err := hello(append(many, "made-up")...).Check()
	assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%v", err)
	assert.Contains(t, bourse.ErrorMessage(err), fmt.Sprintf("more than %d GPU models on one server", protocol.MaxServerModels))
}

// TestImageSources: a source names a registry and perhaps a repository
// prefix, read as references read them; it matches whole repository
// parts only.
func TestImageSources(t *testing.T) {
	for in, want := range map[string]string{
		"ghcr.io":                   "ghcr.io",
		"ghcr.io/acme":              "ghcr.io/acme",
		"docker.io":                 "docker.io",
		"index.docker.io/library":   "docker.io/library",
		"127.0.0.1:5000/tests/deep": "127.0.0.1:5000/tests/deep",
		"localhost":                 "localhost",
	} {
		got, err := protocol.ParseImageSource(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "acme", "acme/train", "ghcr.io/acme:v1", "ghcr.io/acme@sha256:" + strings.Repeat("0", 64), "ghcr.io/Acme", "ghcr.io/", "ghcr.io:0"} {
		_, err := protocol.ParseImageSource(in)
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%q: %v", in, err)
	}
	runs := &protocol.Runs{Runner: protocol.RunnerContainer, Images: &protocol.Images{Allowed: []string{"ghcr.io/acme", "index.docker.io/library"}}}
	for image, takes := range map[string]bool{
		"ghcr.io/acme":               true,
		"ghcr.io/acme/train:v2":      true,
		"ghcr.io/acme/a/b":           true,
		"ghcr.io/acmecorp/train":     false,
		"ghcr.io/acm":                false,
		"busybox":                    true,
		"docker.io/library/python:3": true,
		"docker.io/acme/train":       false,
		"ghcr.io.evil.example/acme":  false,
	} {
		assert.Equal(t, takes, runs.Takes(&contract.JobSpec{Image: image}), image)
	}
}

func errorField(err error) string {
	var be *bourse.Error
	if errors.As(err, &be) {
		return be.Field
	}
	return ""
}

// TestFilesBucketOf: every client has a bucket of its own, named as
// object stores allow, whatever its id holds.
func TestFilesBucketOf(t *testing.T) {
	seen := map[string]string{}
	for _, id := range []string{"ada", "a_a", "a@a", "a__a", "a_aa", "a@", "a_", "A", "a-b", "x@y_z"} {
		b := protocol.FilesBucketOf(id)
		assert.Regexp(t, `^[A-Za-z0-9_-]+$`, b, id)
		if other, ok := seen[b]; ok {
			t.Errorf("%q and %q share bucket %s", id, other, b)
		}
		seen[b] = id
	}
	assert.Equal(t, "BOURSE_FILES_ada", protocol.FilesBucketOf("ada"))
	assert.Equal(t, "OBJ_BOURSE_FILES_x_ay__z", protocol.FilesStreamOf("x@y_z"))
}
