package natsauth_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/natsauth"
)

// TestPasswordConfigPermissions: the password file gives each party the
// permissions of its role, as the JWTs of operator mode do: both are
// written from PermissionsOf, and nats-server reads the file so.
func TestPasswordConfigPermissions(t *testing.T) {
	parties := []natsauth.Party{{ID: "exchange", Role: natsauth.RoleExchange}, {ID: "alice", Role: natsauth.RoleClient},
		{ID: "gpu1", Role: natsauth.RoleServer}, {ID: "console", Role: natsauth.RoleViewer}}
	for i := range parties {
		parties[i].Password = parties[i].ID + "-secret"
	}
	c := natsauth.PasswordConfig{Host: "127.0.0.1", Port: 4222, Parties: parties, Command: "test"}
	require.NoError(t, c.Check())
	var b strings.Builder
	require.NoError(t, c.Write(&b))
	file := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(file, []byte(b.String()), 0o600))
	opts, err := natsserver.ProcessConfigFile(file)
	require.NoError(t, err)
	require.Len(t, opts.Users, len(parties))
	for i, u := range opts.Users {
		p := parties[i]
		assert.Equal(t, p.ID, u.Username)
		want, err := natsauth.PermissionsOf(p.Role, p.ID)
		require.NoError(t, err)
		if want.All {
			assert.Nil(t, u.Permissions, "the exchange may do everything")
			continue
		}
		require.NotNil(t, u.Permissions, p.ID)
		if want.DenyPublish {
			assert.Equal(t, []string{">"}, u.Permissions.Publish.Deny, p.ID)
			assert.Empty(t, u.Permissions.Publish.Allow, p.ID)
		} else {
			assert.Equal(t, want.Publish, u.Permissions.Publish.Allow, p.ID)
		}
		assert.Equal(t, want.Subscribe, u.Permissions.Subscribe.Allow, p.ID)
		assert.Equal(t, want.Responses, u.Permissions.Response != nil, p.ID)
	}
}

// TestPasswordConfigCheck: a configuration that cannot be right is
// refused before any password is made for it.
func TestPasswordConfigCheck(t *testing.T) {
	party := func(id, role string) natsauth.Party { return natsauth.Party{ID: id, Role: role} }
	for _, tt := range []struct {
		name string
		c    natsauth.PasswordConfig
		want string
	}{
		{"Twice", natsauth.PasswordConfig{Parties: []natsauth.Party{party("alice", natsauth.RoleClient), party("alice", natsauth.RoleServer)}}, `"alice" twice`},
		{"BadID", natsauth.PasswordConfig{Parties: []natsauth.Party{party("Alice.Smith", natsauth.RoleClient)}}, `client "Alice.Smith"`},
		{"KeyAlone", natsauth.PasswordConfig{TLS: natsauth.TLS{Key: "k.pem"}}, "--tls-cert and --tls-key together"},
		{"VerifyWithoutCA", natsauth.PasswordConfig{TLS: natsauth.TLS{Cert: "c.pem", Key: "k.pem", Verify: true}}, "--tls-verify needs --tls-ca"},
		{"Sync", natsauth.PasswordConfig{Sync: "often"}, `sync interval "often"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}
