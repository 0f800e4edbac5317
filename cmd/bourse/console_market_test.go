package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/internal/natstest"
	"github.com/bourse/bourse/protocol"
)

// TestConsoleNATSUser: the console follows the market data as a client
// or as a viewer, each as nats-config writes them (docs/operations.md,
// "The console's NATS user"); a user that may not read it is refused at
// start, and so is a NATS that is not there.
func TestConsoleNATSUser(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "nats.conf")
	require.NoError(t, os.WriteFile(conf, []byte(execute(t, nil, "admin", "nats-config", "--client", "alice", "--viewer", "console", "--example-passwords")), 0o600))
	opts, err := server.ProcessConfigFile(conf)
	require.NoError(t, err)
	opts.Users = append(opts.Users, &server.User{Username: "nobody", Password: "nobody-secret", Permissions: &server.Permissions{
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_nobody.>"}}}})
	ns := natstest.StartWith(t, opts)
	exch := natstest.Connect(t, ns, "", nats.UserInfo("exchange", "exchange-secret"))
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for _, user := range []string{"alice", "console"} {
		t.Run(user, func(t *testing.T) {
			h, closeNATS, err := followMarket(ctx, ns.ClientURL(), []nats.Option{nats.UserInfo(user, user+"-secret")}, log)
			require.NoError(t, err)
			defer closeNATS()
			body, err := protocol.Marshal(protocol.Market{Currency: "CRED", Scale: 2, At: time.Now(),
				Models: []protocol.MarketModel{{Model: "H100", GPUs: 8, Free: 5}}})
			require.NoError(t, err)
			require.Eventually(t, func() bool {
				require.NoError(t, exch.Publish(protocol.MarketSubject("CRED"), body))
				m, ok := h.Latest("CRED")
				return ok && m.Models[0].Free == 5
			}, 5*time.Second, 50*time.Millisecond, "the market data came")
		})
	}
	// The viewer cannot pass for a client of its name.
	refused := make(chan error, 1)
	viewer := natstest.Connect(t, ns, "", nats.UserInfo("console", "console-secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { refused <- err }))
	require.NoError(t, viewer.Publish(protocol.ClientSubject("console", protocol.VerbOffer), []byte(`{}`)))
	select {
	case err := <-refused:
		assert.ErrorIs(t, err, nats.ErrPermissionViolation)
	case <-time.After(3 * time.Second):
		t.Fatal("a viewer published an offer")
	}

	_, _, err = followMarket(ctx, ns.ClientURL(), []nats.Option{nats.UserInfo("nobody", "nobody-secret")}, log)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the console's NATS user may not read bourse.v1.market.>")
	assert.ErrorIs(t, err, nats.ErrPermissionViolation)

	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users, []byte(userLine(t, "ann")+"\n"), 0o600))
	_, errOut, code := bourseCmd("console", "--db", "mem", "--users", users, "--listen", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1")
	assert.Equal(t, exitUnavailable, code)
	assert.Contains(t, errOut, "connect to NATS at nats://127.0.0.1:1")
}

// TestDemoConsoleMarket is issue 23's "done when": during bourse demo
// the console's Market page shows live prices and free GPUs.
func TestDemoConsoleMarket(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	users, err := console.ParseUsers(userLine(t, "ann"))
	require.NoError(t, err)
	go func() {
		done <- runDemo(ctx, io.Discard, demoConfig{duration: 8 * time.Second, seed: 1, logger: slog.New(slog.DiscardHandler), dbURL: "mem",
			console: "127.0.0.1:0", consoleUsers: users, consoleReady: func(a string) { addr <- a }})
	}()
	defer func() {
		cancel()
		require.NoError(t, <-done)
	}()
	base := "http://" + <-addr
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/login", url.Values{"user": {"ann"}, "password": {"ann-password"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// A row with a median price and GPUs free: contracts made, and
	// servers heard from.
	row := regexp.MustCompile(`<td class="num median">([0-9.]+)</td>.*?<td class="num gpus">(\d+)</td><td class="num free">(\d+)</td>`)
	var page string
	require.Eventually(t, func() bool {
		resp, err := c.Get(base + "/market")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page = string(b)
		for _, m := range row.FindAllStringSubmatch(page, -1) {
			if gpus, _ := strconv.Atoi(m[2]); gpus > 0 {
				return true
			}
		}
		return false
	}, 30*time.Second, 500*time.Millisecond, "no prices and GPUs on the Market page:\n%s", page)
	assert.Contains(t, page, "last update")
	assert.Contains(t, page, `<svg class="chart" role="img" aria-label="prices per GPU-hour of `)
}
