package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"github.com/bourse/bourse/internal/natstest"
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
	grant := url.Values{"csrf": {csrf[1]}, "key": {"console-g1"}, "form": {"grant"}, "back": {"/"},
		"owner": {"alice"}, "currency": {"CRED"}, "amount": {"12"}}
	resp, err = c.PostForm(base+"/grant", grant)
	require.NoError(t, err)
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	// A grant is confirmed on a page of its own: confirm it as its form does.
	confirm := regexp.MustCompile(`name="confirm" value="([^"]+)"`).FindStringSubmatch(string(body))
	require.NotNil(t, confirm, "a grant asks for confirmation")
	grant.Set("confirm", confirm[1])
	resp, err = c.PostForm(base+"/grant", grant)
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
	base, _, stop = startConsoleSaying(t, args...)
	require.True(t, strings.HasPrefix(base, "http://127.0.0.1:"), base)
	return base, stop
}

// startConsoleSaying runs bourse with args until stop, and returns the
// URL it serves on (its host 127.0.0.1 if it listens on every address)
// and what it said before.
func startConsoleSaying(t *testing.T, args ...string) (base, said string, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pwr := io.Pipe()
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, pwr, io.Discard) }()
	r := bufio.NewReader(pr)
	for !strings.HasPrefix(base, "console at ") {
		said += base
		line, err := r.ReadString('\n')
		require.NoError(t, err, "said: %s", said)
		base = line
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(base), "console at "), "/")
	for _, wild := range []string{"[::]", "0.0.0.0"} {
		base = strings.Replace(base, "//"+wild+":", "//127.0.0.1:", 1)
	}
	var code *int
	return base, said, func() int {
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

// TestConsoleOffLoopback: on an address other than loopback the console
// refuses plain HTTP, or with --insecure-http says loudly that it serves
// it; it serves TLS itself, or stands behind a proxy, with Secure cookies
// either way.
func TestConsoleOffLoopback(t *testing.T) {
	users := filepath.Join(t.TempDir(), "users")
	require.NoError(t, os.WriteFile(users, []byte(userLine(t, "ann")+"\n"), 0o600))
	args := []string{"console", "--db", "mem", "--users", users, "--listen", "0.0.0.0:0"}

	_, errOut, code := bourseCmd(args...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refuses plain HTTP")
	assert.Contains(t, errOut, "--tls-cert")
	assert.Contains(t, errOut, "--behind-proxy")
	_, errOut, code = bourseCmd(append(args, "--tls-cert", "x.pem")...)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "--tls-cert and --tls-key go together")

	base, said, stop := startConsoleSaying(t, append(args, "--insecure-http")...)
	assert.Contains(t, said, "WARNING: the console serves plain HTTP")
	assert.True(t, strings.HasPrefix(base, "http://"), base)
	assert.Equal(t, 0, stop())

	login := func(c *http.Client, base string, header http.Header) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"user": {"ann"}, "password": {"ann-password"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header[k] = v
		}
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		return resp
	}
	secure := func(resp *http.Response) {
		t.Helper()
		require.NotEmpty(t, resp.Cookies())
		for _, ck := range resp.Cookies() {
			assert.True(t, ck.Secure, "%s is Secure", ck.Name)
		}
		assert.NotEmpty(t, resp.Header.Get("Strict-Transport-Security"))
	}

	files := natstest.MakeTLS(t)
	base, _, stop = startConsoleSaying(t, append(args, "--tls-cert", files.ServerCert, "--tls-key", files.ServerKey)...)
	require.True(t, strings.HasPrefix(base, "https://"), base)
	pem, err := os.ReadFile(files.CA)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	secure(login(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, base, nil))
	assert.Equal(t, 0, stop())

	base, said, stop = startConsoleSaying(t, append(args, "--behind-proxy", "127.0.0.1")...)
	assert.NotContains(t, said, "WARNING")
	secure(login(&http.Client{}, base, http.Header{"X-Forwarded-For": {"198.51.100.7"}}))
	assert.Equal(t, 0, stop())
}
