package protocol_test

import (
	"strings"
	"testing"

	"github.com/bourse/bourse/protocol"
)

// TestSender: a request subject's sender, read by hand, as splitting the
// subject at its dots reads it (splitSender, the way it was read before).
func TestSender(t *testing.T) {
	for _, s := range []string{
		"bourse.v1.client.alice.offer", "bourse.v1.server.gpu-1.heartbeat", "bourse.v1.server.gpu-1.usage.c-9",
		"bourse.v1.server.gpu-1", "bourse.v1.server.gpu-1.", "bourse.v1.server..hello", "bourse.v1.deliver.alice.event",
		"bourse.v2.client.alice.offer", "bourse.v1client.alice.offer", "bourse.v1", "", "bourse.v1.client.alice.offer.x.y",
		"xbourse.v1.client.alice.offer", "bourse.v1.client", "bourse.v1.client.a.b",
	} {
		role, id, verb, ok := protocol.Sender(s)
		wr, wi, wv, wok := splitSender(s)
		if role != wr || id != wi || verb != wv || ok != wok {
			t.Errorf("Sender(%q) = %q %q %q %v, want %q %q %q %v", s, role, id, verb, ok, wr, wi, wv, wok)
		}
	}
}

func FuzzSender(f *testing.F) {
	f.Add("bourse.v1.client.alice.offer")
	f.Add("bourse.v1.server..hello.x")
	f.Fuzz(func(t *testing.T, s string) {
		role, id, verb, ok := protocol.Sender(s)
		wr, wi, wv, wok := splitSender(s)
		if role != wr || id != wi || verb != wv || ok != wok {
			t.Errorf("Sender(%q) = %q %q %q %v, want %q %q %q %v", s, role, id, verb, ok, wr, wi, wv, wok)
		}
	})
}

func splitSender(subject string) (role, id, verb string, ok bool) {
	t := strings.Split(subject, ".")
	if len(t) < 5 || t[0]+"."+t[1] != protocol.Prefix {
		return "", "", "", false
	}
	if t[2] != protocol.RoleClient && t[2] != protocol.RoleServer {
		return "", "", "", false
	}
	return t[2], t[3], t[4], true
}
