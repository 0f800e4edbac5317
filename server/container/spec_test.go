package container

import (
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/server/process"
)

// TestArgv: what runs, as docker run reads an image and its arguments,
// each case worked out by hand.
func TestArgv(t *testing.T) {
	img := ImageConfig{Entrypoint: []string{"/bin/tini", "--"}, Cmd: []string{"python", "train.py"}}
	for _, tt := range []struct {
		name string
		img  ImageConfig
		job  contract.JobSpec
		want []string
	}{
		{"Image", img, contract.JobSpec{}, []string{"/bin/tini", "--", "python", "train.py"}},
		{"ArgsReplaceCmd", img, contract.JobSpec{Args: []string{"eval.py"}}, []string{"/bin/tini", "--", "eval.py"}},
		{"CommandReplacesBoth", img, contract.JobSpec{Command: "/bin/sh", Args: []string{"-c", "x"}}, []string{"/bin/sh", "-c", "x"}},
		{"CmdAlone", ImageConfig{Cmd: []string{"/app"}}, contract.JobSpec{}, []string{"/app"}},
		{"ArgsWithoutEntrypoint", ImageConfig{Cmd: []string{"/app"}}, contract.JobSpec{Args: []string{"/other", "-v"}}, []string{"/other", "-v"}},
	} {
		got, err := argv(tt.img, &tt.job)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
	_, err := argv(ImageConfig{}, &contract.JobSpec{Image: "x"})
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err))
	_, err = argv(ImageConfig{Entrypoint: []string{""}}, &contract.JobSpec{Image: "x"})
	assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "an empty program")
}

func testContainer() *container {
	return &container{
		slot:    process.Slot{Contract: "c-1", UID: 1234, GID: 1235, Groups: []uint32{44}, Cgroup: "/bourse-1-1/job-c-1", Work: "/out/c-1/work", Results: "/out/c-1/results"},
		image:   ImageConfig{Env: []string{"PATH=/opt/venv/bin:/usr/bin", "LANG=C.UTF-8", "SEED=image", "CUDA_VISIBLE_DEVICES=all"}, User: "root", Entrypoint: []string{"/app"}, WorkingDir: "/app"},
		job:     &contract.JobSpec{Image: "ghcr.io/acme/app"},
		jobEnv:  map[string]string{"SEED": "42"},
		baseEnv: map[string]string{"LANG": "operator", "HTTP_PROXY": "http://proxy:3128", "PATH": "/operator"},
		devices: "GPU-aaaa",
		limits:  limits{Pids: 100, MemoryBytes: 1 << 30, TmpBytes: 1 << 20},
		network: NetworkNone,
	}
}

// TestEnv: the image's variables over the operator's, the job's over the
// image's, the runner's over all; HOME the working folder.
func TestEnv(t *testing.T) {
	c := testContainer()
	assert.Equal(t, []string{"PATH=/opt/venv/bin:/usr/bin", "HTTP_PROXY=http://proxy:3128", "LANG=C.UTF-8", "SEED=42",
		"CUDA_VISIBLE_DEVICES=GPU-aaaa", "HOME=" + WorkMount, "NVIDIA_VISIBLE_DEVICES=GPU-aaaa", "BOURSE_CONTRACT=c-1",
		process.ResultsEnv + "=" + ResultsMount}, c.env())
	c.gpus.libPath = DriverLibDir
	c.image.Env = append(c.image.Env, "LD_LIBRARY_PATH=/opt/lib", "HOME=/root")
	env := c.env()
	assert.Contains(t, env, "LD_LIBRARY_PATH=/opt/lib:"+DriverLibDir, "the driver's libraries after the image's")
	assert.Contains(t, env, "HOME=/root", "an image's HOME stays")
}

// TestSpec: what a container is given and what it is not, in its OCI
// configuration.
func TestSpec(t *testing.T) {
	c := testContainer()
	s, err := c.spec()
	require.NoError(t, err)
	assert.True(t, s.Root.Readonly, "a read-only root")
	assert.Equal(t, specs.User{UID: 1234, GID: 1235, AdditionalGids: []uint32{44}}, s.Process.User, "the job user, whatever the image's USER (root)")
	assert.Equal(t, "/app", s.Process.Cwd, "the image's working folder")
	assert.True(t, s.Process.NoNewPrivileges)
	caps := s.Process.Capabilities
	require.NotNil(t, caps)
	for _, set := range [][]string{caps.Bounding, caps.Effective, caps.Inheritable, caps.Permitted, caps.Ambient} {
		assert.NotNil(t, set, "every set said, and empty")
		assert.Empty(t, set)
	}
	assert.Equal(t, "/bourse-1-1/job-c-1", s.Linux.CgroupsPath)
	assert.Equal(t, int64(100), *s.Linux.Resources.Pids.Limit)
	assert.Equal(t, int64(1<<30), *s.Linux.Resources.Memory.Limit)
	assert.Equal(t, int64(1<<30), *s.Linux.Resources.Memory.Swap, "no swap")
	assert.Equal(t, specs.LinuxDeviceCgroup{Allow: false, Access: "rwm"}, s.Linux.Resources.Devices[0], "every device denied first")
	assert.Contains(t, s.Linux.MaskedPaths, "/proc/kcore")
	assert.Contains(t, s.Linux.ReadonlyPaths, "/proc/sys")
	require.NotNil(t, s.Linux.Seccomp)
	assert.True(t, slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return n.Type == specs.NetworkNamespace && n.Path == ""
	}), "a network of its own")
	mounts := map[string]specs.Mount{}
	for _, m := range s.Mounts {
		mounts[m.Destination] = m
	}
	assert.Equal(t, "/out/c-1/work", mounts[WorkMount].Source)
	assert.Equal(t, "/out/c-1/results", mounts[ResultsMount].Source)
	assert.Contains(t, mounts["/tmp"].Options, "size=1048576")
	assert.Contains(t, mounts["/dev/shm"].Options, "size=1048576")
	assert.NotContains(t, mounts, "/etc/resolv.conf")

	c.network, c.limits.MemoryBytes, c.image.WorkingDir = NetworkHost, 0, ""
	s, err = c.spec()
	require.NoError(t, err)
	assert.False(t, slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.NetworkNamespace }), "the host's network")
	assert.True(t, slices.ContainsFunc(s.Mounts, func(m specs.Mount) bool { return m.Destination == "/etc/resolv.conf" }), "and its names")
	assert.Nil(t, s.Linux.Resources.Memory, "no memory bound")
	assert.Equal(t, WorkMount, s.Process.Cwd, "the working folder where the image names none")
}
