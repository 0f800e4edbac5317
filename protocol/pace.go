package protocol

import "github.com/bourse/bourse/contract"

// DeliverPace is the exchange's word to a server that it is to heartbeat
// less often (a publish, bourse.v1.deliver.<s>.pace, carrying Pace): the
// fleet grew since the server said hello, and its heartbeat said an
// interval shorter than the exchange gives servers now. A server older
// than pacing does not listen, and keeps the interval of its hello reply.
const DeliverPace = "pace"

// Pace is the heartbeat interval a server is to keep from now on.
type Pace struct {
	Heartbeat contract.Duration `json:"heartbeat"`
}
