package natsvc_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/bidder"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/exchange"
	"github.com/bourse/bourse/internal/dectest"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// TestFilesToTheirServerOnly runs, under the passwords of
// docs/nats-server.conf, a job on its client's files: alice puts a folder
// into her bucket, her job on gpu1 reads it, and once the contract ends
// the files go. bob cannot name her files in an offer of his, nor reach
// her bucket through NATS; gpu2 is handed no files of gpu1's contract,
// while gpu1 is; files whose bytes are not the digest the terms name
// start no job, and the client is told why.
func TestFilesToTheirServerOnly(t *testing.T) {
	ns, exch := shippedMarket(t, exchange.Config{StartTimeout: time.Second}, 2, "/bin/cat", "/bin/sleep")
	ctx := context.Background()

	dial := func(id string) *bidder.Client {
		c, err := bidder.Dial(bidder.Config{ID: id, URL: ns.ClientURL(), Credentials: bidder.Credentials{User: id, Password: id + "-secret"}, Timeout: 3 * time.Second})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	alice, bob := dial("alice"), dial("bob")
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "data"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "data", "x.csv"), []byte("alice's data\n"), 0o644))
	files, err := alice.PutFiles(ctx, dir, 0)
	require.NoError(t, err)
	terms := func(f contract.Files, command string, args ...string) contract.Terms {
		return contract.Terms{Client: "alice", Currency: cred, GPUs: 1, TimeLimit: time.Minute, Prepayment: dectest.D("0.60"),
			P: contract.Flat(dectest.D("0.01")), Job: &contract.JobSpec{Command: command, Args: args, Files: &f}}
	}
	obs, err := jetstream.New(exch)
	require.NoError(t, err)
	bucket, err := obs.ObjectStore(ctx, protocol.FilesBucketOf("alice"))
	require.NoError(t, err)

	t.Run("JobReadsItsFiles", func(t *testing.T) {
		id := offerUntilAccepted(t, alice, terms(files, "/bin/cat", "data/x.csv"))
		var stdout bytes.Buffer
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := alice.FollowLogs(fctx, id, bidder.Follow{Wait: true, Every: 50 * time.Millisecond}, &stdout, &bytes.Buffer{})
		require.NoError(t, err)
		assert.Equal(t, "alice's data\n", stdout.String())
		require.Eventually(t, func() bool {
			_, err := bucket.GetInfo(ctx, files.Digest)
			return err != nil
		}, 10*time.Second, 50*time.Millisecond, "the files are removed once the contract that named them ends")
	})

	t.Run("AnotherClientsFiles", func(t *testing.T) {
		_, err := bob.PutFiles(ctx, t.TempDir(), 0) // bob has a bucket too
		require.NoError(t, err)
		f, err := alice.PutFiles(ctx, dir, 0)
		require.NoError(t, err)
		tm := terms(f, "/bin/cat", "data/x.csv")
		tm.Client = "bob"
		r, err := bob.Offer(ctx, "bob-names-alices", tm)
		assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "bob's offer of alice's files: %+v", r)
		assert.Contains(t, bourse.ErrorMessage(err), "not stored in your bucket")
		natstest.FilesRefused(t, ns.ClientURL(), "bob", "alice", nats.UserInfo("bob", "bob-secret"))
	})

	t.Run("OverTheExchangesLimit", func(t *testing.T) {
		// 2 GiB, over the default 1 GiB: refused before a byte is put.
		huge := contract.Files{Digest: files.Digest, Bytes: 2 << 30}
		err := alice.PutArchive(ctx, bytes.NewReader(nil), huge)
		assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "%v", err)
		assert.Contains(t, bourse.ErrorMessage(err), "this exchange keeps at most 1073741824")
		r, err := alice.Offer(ctx, "over-the-limit", terms(huge, "/bin/cat", "data/x.csv"))
		assert.Equal(t, bourse.EInvalidOffer, bourse.ErrorCode(err), "an offer naming them: %+v", r)
	})

	t.Run("OnlyItsServerFetches", func(t *testing.T) {
		f, err := alice.PutFiles(ctx, dir, 0)
		require.NoError(t, err)
		id := offerUntilAccepted(t, alice, terms(f, "/bin/sleep", "30"))
		defer alice.Kill(ctx, id)
		fetch := func(server string) (protocol.FetchReply, error) {
			nc := natstest.Connect(t, ns, protocol.InboxPrefix(server), nats.UserInfo(server, server+"-secret"))
			msg, err := nc.Request(protocol.ServerSubject(server, protocol.VerbFetch), []byte(`{"contract":"`+id+`"}`), 5*time.Second)
			require.NoError(t, err)
			if err := natswire.DecodeError(msg); err != nil {
				return protocol.FetchReply{}, err
			}
			var r protocol.FetchReply
			require.NoError(t, json.Unmarshal(msg.Data, &r))
			return r, nil
		}
		_, err = fetch("gpu2")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "gpu2 was handed gpu1's contract's files: %v", err)
		r, err := fetch("gpu1")
		require.NoError(t, err)
		assert.True(t, r.Done)
		h := sha256.New()
		for _, c := range r.Chunks {
			h.Write(c)
		}
		assert.Equal(t, f.Digest, "sha256:"+hex.EncodeToString(h.Sum(nil)), "its own contract's files, whole")
	})

	t.Run("DigestMismatch", func(t *testing.T) {
		other := []byte("not the archive the digest names, but as long as it says...")
		lie := contract.Files{Digest: "sha256:" + hex.EncodeToString(make([]byte, 32)), Bytes: int64(len(other))}
		require.NoError(t, alice.PutArchive(ctx, bytes.NewReader(other), lie))
		id := offerUntilAccepted(t, alice, terms(lie, "/bin/cat", "data/x.csv"))
		var stderr bytes.Buffer
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := alice.FollowLogs(fctx, id, bidder.Follow{Wait: true, Every: 50 * time.Millisecond}, &bytes.Buffer{}, &stderr)
		require.NoError(t, err)
		assert.Contains(t, stderr.String(), "the job did not start: the files fetched do not match the digest the terms name")
		require.Eventually(t, func() bool {
			k, err := alice.Contract(ctx, id)
			return err == nil && k.State == contract.StateVoided
		}, 10*time.Second, 50*time.Millisecond, "voided, its prepayment returned")
	})
}
