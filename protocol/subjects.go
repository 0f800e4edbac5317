// Package protocol is the exchange's wire protocol: the NATS subjects and the
// JSON messages that clients, GPU servers and the exchange send each other.
// docs/protocol.md is its reference; any NATS client can speak it.
//
// Identity is the subject. Party X (a client or a server) publishes only
// under bourse.v1.client.X or bourse.v1.server.X, and subscribes only to its
// own delivery subjects (bourse.v1.deliver.X.>) and its own inbox
// (_INBOX_X.>): NATS user permissions enforce both (see
// docs/nats-server.conf), and the exchange takes the subject token as the
// sender.
package protocol

import (
	"fmt"
	"strings"
)

// Prefix is the root of every subject of this protocol version.
const Prefix = "bourse.v1"

// Roles: the third token of a request subject.
const (
	RoleClient = "client"
	RoleServer = "server"
)

// Client request verbs: bourse.v1.client.<client>.<verb>.
const (
	VerbOffer     = "offer"
	VerbSuspend   = "suspend"
	VerbKill      = "kill"
	VerbContract  = "contract"
	VerbContracts = "contracts"
	VerbBalance   = "balance"
	VerbStatement = "statement"
	VerbQuote     = "quote"   // what the servers would say to an offer, binding no one
	VerbCancel    = "cancel"  // take a waiting offer out of the book
	VerbWaiting   = "waiting" // list one's waiting offers
)

// Server verbs: bourse.v1.server.<server>.<verb>.
const (
	VerbHello     = "hello"     // request: register, answered with the exchange's settings
	VerbHeartbeat = "heartbeat" // publish: capacity and running contracts
	VerbStarted   = "started"   // request: a contract's job has started
	VerbUsage     = "usage"     // JetStream: bourse.v1.server.<server>.usage.<contract>
)

// Delivery verbs, from the exchange: bourse.v1.deliver.<party>.<verb>.
const (
	DeliverOffer   = "offer"   // to a server, request: decide on an offer
	DeliverStart   = "start"   // to a server, request: start an accepted contract
	DeliverCancel  = "cancel"  // to a server, publish: an accept that was not chosen
	DeliverControl = "control" // to a server, request: suspend or kill a contract
	DeliverEvent   = "event"   // to a client, publish: a contract event
	DeliverQuote   = "quote"   // to a server, request: decide on a quote, claiming nothing
)

// SigHeader carries a server's signature of a message's body (package
// signing): on usage readings, where the exchange requires it.
const SigHeader = "Bourse-Sig"

// DeadlineHeader, optional on a client's request, is when the client stops
// waiting for the answer, in RFC 3339 (UTC, with fractions of a second):
// an exchange that takes the request up later than that (it was paused,
// or its backlog was long) answers deadline_exceeded and does nothing,
// so that it spends no negotiation on a client that has gone, and a retry
// meanwhile is not crowded out.
const DeadlineHeader = "Bourse-Deadline"

// AcceptSigned is what a server signs when it accepts an offer: the offer
// exactly as it was delivered, a newline, and the answer exactly as it is
// sent (neither has a newline of its own: both are compact JSON). It binds
// the accept to the very terms it accepted.
func AcceptSigned(offer, answer []byte) []byte {
	b := make([]byte, 0, len(offer)+1+len(answer))
	return append(append(append(b, offer...), '\n'), answer...)
}

// UsageStream is the JetStream stream that carries usage readings.
const UsageStream = "BOURSE_USAGE"

// UsageSubjects is the stream's subject filter.
const UsageSubjects = Prefix + ".server.*.usage.*"

// CheckID reports whether id can name a party or a contract: it must be one
// NATS subject token (no dots, no spaces, no wildcards): 1-64 of A-Z a-z
// 0-9 _ - @, not starting with @. It is a loop over the bytes rather than
// a regular expression: every node checks the id of every offer it is
// asked about, and a simulation asks millions.
func CheckID(id string) error {
	ok := len(id) >= 1 && len(id) <= 64 && id[0] != '@'
	for i := 0; ok && i < len(id); i++ {
		ok = idByte(id[i])
	}
	if !ok {
		return fmt.Errorf("%q is not a valid id: use 1-64 of A-Z a-z 0-9 _ - @", id)
	}
	return nil
}

func idByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '@'
}

// ClientSubject is where client c sends requests of verb.
func ClientSubject(c, verb string) string { return Prefix + ".client." + c + "." + verb }

// ServerSubject is where server s sends messages of verb.
func ServerSubject(s, verb string) string { return Prefix + ".server." + s + "." + verb }

// UsageSubject is where server s publishes readings of contract id.
func UsageSubject(s, id string) string { return Prefix + ".server." + s + ".usage." + id }

// DeliverSubject is where the exchange sends party p messages of verb.
func DeliverSubject(p, verb string) string { return Prefix + ".deliver." + p + "." + verb }

// InboxPrefix is party p's inbox prefix: connect with nats.CustomInboxPrefix.
func InboxPrefix(p string) string { return "_INBOX_" + p }

// CheckInbox says whether reply, a reply subject a connection makes
// (nats.Conn.NewRespInbox), is under party p's inbox: the exchange answers
// no other.
func CheckInbox(reply, p string) error {
	if !strings.HasPrefix(reply, InboxPrefix(p)+".") {
		return fmt.Errorf("the connection's replies come to %s, which the exchange does not answer for %s: connect with nats.CustomInboxPrefix(%q)", reply, p, InboxPrefix(p))
	}
	return nil
}

// Sender returns the role and id of a request subject
// bourse.v1.<role>.<id>.<verb>[.…], and whether it has that form.
func Sender(subject string) (role, id, verb string, ok bool) {
	// By hand, not strings.Split: every request and every heartbeat
	// comes through here, and the tokens are the subject's own bytes.
	rest, ok := strings.CutPrefix(subject, Prefix+".")
	if !ok {
		return "", "", "", false
	}
	role, rest, ok1 := strings.Cut(rest, ".")
	id, rest, ok2 := strings.Cut(rest, ".")
	verb, _, _ = strings.Cut(rest, ".")
	if !ok1 || !ok2 || role != RoleClient && role != RoleServer {
		return "", "", "", false
	}
	return role, id, verb, true
}
