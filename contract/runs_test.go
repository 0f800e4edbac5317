package contract_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
)

// TestRunsTakes is the rule both the exchange and the server apply.
func TestRunsTakes(t *testing.T) {
	program := &contract.JobSpec{Command: "/usr/bin/python3"}
	byName := &contract.JobSpec{Command: "python3"}
	profile := &contract.JobSpec{Profile: &contract.Profile{}}
	synthetic := &contract.Runs{Runner: contract.RunnerSynthetic, Meter: contract.MeterSynthetic}
	process := &contract.Runs{Runner: contract.RunnerProcess, Meter: contract.MeterNVML, Programs: []string{"/usr/bin/python3"}}
	unknown := &contract.Runs{Runner: "vm"}
	image := &contract.JobSpec{Image: "ghcr.io/acme/train:v1"}
	imageAndCommand := &contract.JobSpec{Image: "ghcr.io/acme/train@sha256:" + strings.Repeat("0", 64), Command: "/usr/bin/python3"}
	hub := &contract.JobSpec{Image: "busybox"}
	elsewhere := &contract.JobSpec{Image: "ghcr.io/acmecorp/x"}
	container := &contract.Runs{Runner: contract.RunnerContainer, Meter: contract.MeterNVML,
		Images: &contract.Images{Allowed: []string{"ghcr.io/acme", "docker.io/library"}}}
	pullsNone := &contract.Runs{Runner: contract.RunnerContainer, Meter: contract.MeterNVML}
	for _, tt := range []struct {
		runs *contract.Runs
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
	takesFiles := func(r contract.Runs) *contract.Runs {
		r.Files = &contract.FilesLimit{MaxBytes: 1 << 20}
		return &r
	}
	for _, tt := range []struct {
		runs *contract.Runs
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
	msg := contract.NotAllowed("x", long)
	assert.Contains(t, msg, "/opt/p15 and 24 more", "a long list is cut")
	assert.NotContains(t, msg, "/opt/p16")
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
		got, err := contract.ParseImageSource(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for _, in := range []string{"", "acme", "acme/train", "ghcr.io/acme:v1", "ghcr.io/acme@sha256:" + strings.Repeat("0", 64), "ghcr.io/Acme", "ghcr.io/", "ghcr.io:0"} {
		_, err := contract.ParseImageSource(in)
		assert.Equal(t, bourse.EInvalid, bourse.ErrorCode(err), "%q: %v", in, err)
	}
	runs := &contract.Runs{Runner: contract.RunnerContainer, Images: &contract.Images{Allowed: []string{"ghcr.io/acme", "index.docker.io/library"}}}
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
