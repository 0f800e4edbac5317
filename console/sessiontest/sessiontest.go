// Package sessiontest is the conformance suite of console.Sessions: the
// console's in-memory sessions and console/sqlsessions pass the same
// tests.
package sessiontest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/console"
)

// t0 is whole seconds, which every store keeps exactly.
var t0 = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func session(id, user string, created time.Time) console.Session {
	return console.Session{ID: id, User: user, Role: console.Admin, Stamp: "stamp-" + user, CSRF: "csrf-" + id,
		Created: created, Expires: created.Add(12 * time.Hour)}
}

// Run runs the suite on stores made by open, a fresh one a test.
func Run(t *testing.T, open func(testing.TB) console.Sessions) {
	ctx := context.Background()
	ids := func(t *testing.T, s console.Sessions, now time.Time) []string {
		t.Helper()
		ss, err := s.List(ctx, now)
		require.NoError(t, err)
		var out []string
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t)
		want := session("a1", "ann", t0)
		want.Role = console.Viewer
		require.NoError(t, s.Create(ctx, want))
		got, err := s.Session(ctx, "a1")
		require.NoError(t, err)
		assert.Equal(t, want.User, got.User)
		assert.Equal(t, want.Role, got.Role)
		assert.Equal(t, want.Stamp, got.Stamp)
		assert.Equal(t, want.CSRF, got.CSRF)
		assert.True(t, want.Created.Equal(got.Created), "created %v, want %v", got.Created, want.Created)
		assert.True(t, want.Expires.Equal(got.Expires), "expires %v, want %v", got.Expires, want.Expires)
	})
	t.Run("ENotFound", func(t *testing.T) {
		_, err := open(t).Session(ctx, "nobody")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "%v", err)
	})
	t.Run("EConflict", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Create(ctx, session("a1", "ann", t0)))
		err := s.Create(ctx, session("a1", "vic", t0))
		assert.Equal(t, bourse.EConflict, bourse.ErrorCode(err), "%v", err)
		got, err := s.Session(ctx, "a1")
		require.NoError(t, err)
		assert.Equal(t, "ann", got.User, "the first stays")
	})
	t.Run("End", func(t *testing.T) {
		s := open(t)
		for i, u := range []string{"ann", "ann", "vic", "bea"} {
			require.NoError(t, s.Create(ctx, session(fmt.Sprint("s", i), u, t0.Add(time.Duration(i)*time.Minute))))
		}
		assert.Equal(t, []string{"s0", "s1", "s2", "s3"}, ids(t, s, t0), "oldest first")
		require.NoError(t, s.End(ctx, "s1"))
		_, err := s.Session(ctx, "s1")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err))
		require.NoError(t, s.End(ctx, "s1"), "ending none is no error")
		assert.Equal(t, []string{"s0", "s2", "s3"}, ids(t, s, t0))
		require.NoError(t, s.Create(ctx, session("s4", "ann", t0.Add(time.Hour))))
		require.NoError(t, s.EndUser(ctx, "ann"))
		assert.Equal(t, []string{"s2", "s3"}, ids(t, s, t0), "ann's, and only hers")
		require.NoError(t, s.EndAll(ctx))
		assert.Empty(t, ids(t, s, t0))
		require.NoError(t, s.EndAll(ctx))
	})
	t.Run("Expiry", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.Create(ctx, session("old", "ann", t0)))
		require.NoError(t, s.Create(ctx, session("new", "vic", t0.Add(6*time.Hour))))
		assert.Equal(t, []string{"new"}, ids(t, s, t0.Add(13*time.Hour)), "the list leaves out the expired")
		_, err := s.Session(ctx, "old")
		require.NoError(t, err, "an expired session is still there until a later Create")
		require.NoError(t, s.Create(ctx, session("later", "bea", t0.Add(13*time.Hour))))
		_, err = s.Session(ctx, "old")
		assert.Equal(t, bourse.ENotFound, bourse.ErrorCode(err), "Create forgot what expired before it")
		_, err = s.Session(ctx, "new")
		assert.NoError(t, err)
	})
}
