package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// A device cookie says that this browser has logged in as a user before
// (OWASP's "device cookies" against online guessing): a login that
// carries one for the name typed is throttled on the device's own bucket,
// so that a user whose name is under attack still logs in from her own
// browser. It is signed with the console's secret, lives a year, and is
// sent only to /login.
const (
	deviceCookie = "bourse_device"
	deviceTTL    = 365 * 24 * time.Hour
)

// deviceOf is the id of the request's device cookie if it is valid and
// for user.
func (c *Console) deviceOf(r *http.Request, user string) (string, bool) {
	ck, err := r.Cookie(deviceCookie)
	if err != nil {
		return "", false
	}
	p, sig, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(sig), []byte(sign(c.cfg.Secret, "device|"+p))) {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return "", false
	}
	fs := strings.Split(string(raw), "|")
	if len(fs) != 3 || fs[0] != user {
		return "", false
	}
	exp, err := strconv.ParseInt(fs[2], 10, 64)
	if err != nil || c.cfg.Now().Unix() > exp {
		return "", false
	}
	return fs[1], true
}

// setDevice gives the browser a device cookie for user.
func (c *Console) setDevice(w http.ResponseWriter, user string) {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	exp := c.cfg.Now().Add(deviceTTL)
	p := base64.RawURLEncoding.EncodeToString([]byte(user + "|" + base64.RawURLEncoding.EncodeToString(b) + "|" + strconv.FormatInt(exp.Unix(), 10)))
	http.SetCookie(w, &http.Cookie{Name: deviceCookie, Value: p + "." + sign(c.cfg.Secret, "device|"+p), Path: "/login", MaxAge: maxAge(deviceTTL),
		HttpOnly: true, Secure: c.cfg.Secure, SameSite: http.SameSiteStrictMode})
}

func sign(secret []byte, s string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(s))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
