package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loginFrom posts a login to c as if from addr, with cookies, and returns
// the status and the cookies set.
func loginFrom(t testing.TB, c *Console, addr, user, password string, cookies ...*http.Cookie) (int, []*http.Cookie) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"user": {user}, "password": {password}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.RemoteAddr = addr + ":40000"
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, req)
	return rec.Code, rec.Result().Cookies()
}

// frozen is a console whose clock stands still, so that no bucket refills
// while a test runs.
func frozen(t testing.TB) *Console {
	cfg, _, _ := testConfig(t)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cfg.Now = func() time.Time { return now }
	c, err := New(cfg)
	require.NoError(t, err)
	return c
}

// TestThrottleJunkFlood: five bad guesses at ann throttle her name; a
// flood of ten thousand junk names from the same address is refused
// without creating a bucket, so that it cannot push the table past its
// bound and wipe ann's, and guesses at ann stay refused.
func TestThrottleJunkFlood(t *testing.T) {
	c := frozen(t)
	const attacker = "203.0.113.9"
	var codes []int
	for range 6 {
		code, _ := loginFrom(t, c, attacker, "ann", "guess")
		codes = append(codes, code)
	}
	assert.Equal(t, []int{401, 401, 401, 401, 401, 429}, codes)
	held := c.throttle.len()
	assert.Equal(t, 2, held, "the attacker's address and ann's name")
	for i := range 10000 {
		code, _ := loginFrom(t, c, attacker, fmt.Sprintf("junk%05d", i), "guess")
		require.Equal(t, http.StatusTooManyRequests, code, "junk name %d", i)
	}
	assert.Equal(t, held, c.throttle.len(), "a refused login creates no bucket")
	code, _ := loginFrom(t, c, attacker, "ann", "guess")
	assert.Equal(t, http.StatusTooManyRequests, code, "ann's name is still throttled after the flood")
	code, _ = loginFrom(t, c, "198.51.100.7", "ann", "guess")
	assert.Equal(t, http.StatusTooManyRequests, code, "from another address too: the name is throttled")
}

// TestThrottleEvictsOldestNotTarget: junk names from many addresses fill
// the table; the least recently used buckets go, never ann's while she is
// being guessed.
func TestThrottleEvictsOldestNotTarget(t *testing.T) {
	c := frozen(t)
	c.throttle.max = 12
	for i := range 5 {
		code, _ := loginFrom(t, c, fmt.Sprintf("192.0.2.%d", i), "ann", "guess")
		require.Equal(t, http.StatusUnauthorized, code)
	}
	for i := range 40 { // each a bcrypt check: a few, past the bound
		code, _ := loginFrom(t, c, fmt.Sprintf("10.0.%d.1", i), fmt.Sprintf("junk%d", i), "guess")
		require.Equal(t, http.StatusUnauthorized, code, "a new address with a new name: allowed")
		require.LessOrEqual(t, c.throttle.len(), 12)
	}
	code, _ := loginFrom(t, c, "192.0.2.200", "ann", "ann-password")
	assert.Equal(t, http.StatusTooManyRequests, code, "ann's bucket survived the churn")
	code, _ = loginFrom(t, c, "10.0.0.1", "junk0", "guess")
	assert.Equal(t, http.StatusUnauthorized, code, "the oldest junk went")
}

// TestThrottleSparesTheUser: whoever types ann's name until it is
// throttled does not lock ann out of the browser she logs in from; a
// browser that never logged in as ann waits like the guesser.
func TestThrottleSparesTheUser(t *testing.T) {
	c := frozen(t)
	code, cookies := loginFrom(t, c, "198.51.100.7", "ann", "ann-password")
	require.Equal(t, http.StatusSeeOther, code)
	var device *http.Cookie
	for _, ck := range cookies {
		if ck.Name == deviceCookie {
			device = ck
		}
	}
	require.NotNil(t, device, "a login gives the browser a device cookie")
	assert.Equal(t, "/login", device.Path)
	assert.True(t, device.HttpOnly)

	for range 8 {
		code, _ = loginFrom(t, c, "203.0.113.9", "ann", "guess")
	}
	assert.Equal(t, http.StatusTooManyRequests, code, "the guesser is throttled")
	code, _ = loginFrom(t, c, "198.51.100.7", "ann", "ann-password", device)
	assert.Equal(t, http.StatusSeeOther, code, "ann, from her browser, logs in")
	req := httptest.NewRequest(http.MethodPost, "/login", nil)
	req.AddCookie(device)
	_, ok := c.deviceOf(req, "vic")
	assert.False(t, ok, "ann's device cookie is hers only")
	code, _ = loginFrom(t, c, "192.0.2.1", "ann", "ann-password")
	assert.Equal(t, http.StatusTooManyRequests, code, "a browser that never logged in as ann meets her name's limit")

	forged := *device
	forged.Value = strings.Replace(device.Value, ".", ".x", 1)
	code, _ = loginFrom(t, c, "192.0.2.2", "ann", "ann-password", &forged)
	assert.Equal(t, http.StatusTooManyRequests, code, "a forged device cookie counts for nothing")
}
