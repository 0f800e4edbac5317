package natsauth_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/bourse/bourse/natsauth"
)

// TestRotateSoon: a live credential is due for rotation within
// RotateWithin of its expiry; one that never expires, has expired or was
// revoked is not.
func TestRotateSoon(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	assert.True(t, natsauth.Issued{Expires: now.Add(29 * day)}.RotateSoon(now))
	assert.False(t, natsauth.Issued{Expires: now.Add(31 * day)}.RotateSoon(now))
	assert.False(t, natsauth.Issued{}.RotateSoon(now), "never expires")
	assert.False(t, natsauth.Issued{Expires: now.Add(-day)}.RotateSoon(now), "expired")
	assert.False(t, natsauth.Issued{Expires: now.Add(day), Revoked: now.Add(-day)}.RotateSoon(now), "revoked")
}
