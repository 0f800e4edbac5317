package protocol_test

import (
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
