package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/internal/pgtest"
)

// TestConsoleCommand makes a users file with bourse console user, serves
// the console on PostgreSQL, logs in over HTTP, grants through its form,
// and finds the grant in bourse admin log under the console's user.
func TestConsoleCommand(t *testing.T) {
	dbURL := pgtest.FreshDB(t)
	ok := adminOK(t, dbURL)
	ok("currency", "CRED", "--scale", "2")
	ok("open", "alice", "--currency", "CRED")

	dir := t.TempDir()
	users, pw := filepath.Join(dir, "users"), filepath.Join(dir, "pw")
	require.NoError(t, os.WriteFile(pw, []byte("correct horse\n"), 0o600))
	out, errOut, code := bourseCmd("console", "user", "ann", "--role", "admin", "--users", users, "--password-file", pw)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "ann (admin) added to "+users+"\n", out)
	_, errOut, code = bourseCmd("console", "user", "ann", "--users", users, "--password-file", pw)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "ann is in")
	require.NoError(t, os.WriteFile(pw, []byte("short\n"), 0o600))
	_, errOut, code = bourseCmd("console", "user", "bob", "--users", users, "--password-file", pw)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "at least 8 characters")

	base, stop := startConsole(t, "console", "--db", dbURL, "--listen", "127.0.0.1:0", "--users", users)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/login", url.Values{"user": {"ann"}, "password": {"correct horse"}})
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "ann (admin)")
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, csrf)
	resp, err = c.PostForm(base+"/grant", url.Values{"csrf": {csrf[1]}, "key": {"console-g1"}, "form": {"grant"}, "back": {"/"},
		"owner": {"alice"}, "currency": {"CRED"}, "amount": {"12"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 0, stop(), "a clean stop")

	assert.Regexp(t, `ann +grant +wallet/CRED/alice +console-g1/grant `, ok("log"))
	assert.Contains(t, ok("balance", "wallet/CRED/alice"), "available 12.00")

	// The session is in the database: it outlives the process, and
	// logging out ends a copy of its cookie in another console at once.
	base, stop = startConsole(t, "console", "--db", dbURL, "--listen", "127.0.0.1:0", "--users", users)
	other, stopOther := startConsole(t, "console", "--db", dbURL, "--listen", "127.0.0.1:0", "--users", users)
	defer stopOther()
	u, _ := url.Parse(base)
	copied, _ := cookiejar.New(nil)
	ou, _ := url.Parse(other)
	copied.SetCookies(ou, jar.Cookies(u))
	thief := &http.Client{Jar: copied, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(c *http.Client, url string) int {
		t.Helper()
		resp, err := c.Get(url)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, status(thief, other+"/"), "the session outlived the restart, and the other console knows it")
	resp, err = c.PostForm(base+"/logout", url.Values{"csrf": {csrf[1]}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, status(thief, other+"/"), "logged out: the copy is sent to log in")

	// SIGHUP reads the users file again: a user removed loses her sessions.
	resp, err = c.PostForm(base+"/login", url.Values{"user": {"ann"}, "password": {"correct horse"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, "/", resp.Request.URL.Path, "logged in again")
	require.NoError(t, os.WriteFile(users, []byte("# ann left\n"+userLine(t, "bea")+"\n"), 0o600))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
	require.Eventually(t, func() bool {
		resp, err := c.Get(base + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.Request.URL.Path == "/login"
	}, 5*time.Second, 20*time.Millisecond, "ann's session ended")
	assert.Equal(t, 0, stop())
}

// startConsole runs bourse with args until stop, and returns the URL it
// serves on.
func startConsole(t *testing.T, args ...string) (base string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pwr := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, pwr, io.Discard) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "console at "), "/")
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), line)
	var code *int
	return base, func() int {
		if code == nil {
			cancel()
			c := <-done
			code = &c
		}
		return *code
	}
}

// userLine is a users-file line of an admin whose password is her name
// and "-password".
func userLine(t *testing.T, name string) string {
	line, err := console.UserLine(name, console.Admin, name+"-password")
	require.NoError(t, err)
	return line
}
