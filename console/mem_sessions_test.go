package console_test

import (
	"testing"

	"github.com/bourse/bourse/console"
	"github.com/bourse/bourse/console/sessiontest"
)

func TestMemSessions(t *testing.T) {
	sessiontest.Run(t, func(testing.TB) console.Sessions { return console.NewMemSessions() })
}
