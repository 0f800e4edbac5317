package market

import (
	"context"
	"maps"
	"sync"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Told keeps what each client was told for each request id it sent (an
// offer, or the take of a counter-offer): the last answer its bidder got,
// after the bidder's own retries under that id. A test compares it with
// the exchange's store: one outcome per request id, the one the client
// heard.
type Told struct {
	mu sync.Mutex
	by map[string]map[string]Answer // client → request id → answer
}

// Answer is what a client heard for one request id.
type Answer struct {
	// Contract is the contract the client was told it has, "" if none.
	Contract string
	// Code is the error's code where the answer was an error, "" if not;
	// Message says more.
	Code    bourse.Code
	Message string
}

// Heard reports whether the client got an answer that says whether the
// request made a contract: a contract, counter-offers or rejections, or
// an error that the exchange gives only when it made none. No answer in
// time (deadline_exceeded), unavailable and internal say nothing: the
// request may have gone through, and its client is to retry it under the
// same id (docs/protocol.md).
func (a Answer) Heard() bool {
	switch a.Code {
	case bourse.EDeadlineExceeded, bourse.EUnavailable, bourse.EInternal:
		return false
	}
	return true
}

func newTold() *Told { return &Told{by: map[string]map[string]Answer{}} }

// Note keeps what client was told for requestID: the reply, or err. The
// market's bidders note every answer; a test's own client notes its own.
func (t *Told) Note(client, requestID string, reply protocol.OfferReply, err error) {
	a := Answer{}
	switch {
	case err != nil:
		a.Code, a.Message = bourse.ErrorCode(err), err.Error()
	case reply.Contract != nil:
		a.Contract = reply.Contract.ID
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by[client] == nil {
		t.by[client] = map[string]Answer{}
	}
	t.by[client][requestID] = a
}

// Of is a copy of what client was told, by request id.
func (t *Told) Of(client string) map[string]Answer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.by[client])
}

// Offer makes the offer and notes what the client was told.
func (o open) Offer(ctx context.Context, requestID string, t contract.Terms) (protocol.OfferReply, error) {
	if o.closing.Load() {
		return protocol.OfferReply{}, errClosed
	}
	reply, err := o.Exchange.Offer(ctx, requestID, t)
	o.told.Note(o.client, requestID, reply, err)
	return reply, err
}

// Take takes a counter-offer and notes what the client was told.
func (o open) Take(ctx context.Context, requestID string, k contract.Counter) (protocol.OfferReply, error) {
	reply, err := o.Exchange.Take(ctx, requestID, k)
	o.told.Note(o.client, requestID, reply, err)
	return reply, err
}
