package exchange

import (
	"context"
	"iter"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// Router carries the House's requests to GPU servers: over NATS
// (exchange/natsvc), or to server nodes in the same process (the
// simulator). A callback may run before the method that takes it returns
// (in process) or later, on another goroutine (over a network).
type Router interface {
	// Ask offers to every one of servers and yields their answers as they
	// come, each server's once, until all have answered, the House's
	// Negotiation time has passed (a server that has not answered then
	// yields an error) or the caller stops. When the caller stops early, it
	// has taken an accept: the router cancels (Cancel) any accept that
	// comes after.
	Ask(ctx context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[Answer]
	// Quote asks every one of servers what it would answer the offer,
	// claiming nothing, and yields their answers as Ask does. An accept
	// binds no one, so nothing is cancelled.
	Quote(ctx context.Context, offer protocol.ServerOffer, servers []string) iter.Seq[Answer]
	// Start asks the contract's server to start its job; done hears its
	// answer, or why there was none.
	Start(ctx context.Context, start protocol.Start, done func(protocol.Started, error))
	// Cancel releases an accept the House did not take; nobody waits.
	Cancel(server, offerID string)
	// Control asks the contract's server to suspend or kill its job; done,
	// if not nil, hears whether the server confirmed.
	Control(ctx context.Context, c contract.Contract, action contract.Reason, done func(error))
}

// Answer is one server's answer to an offer.
type Answer struct {
	Server   string
	Decision protocol.Decision
	Err      error // no answer: the server is silent or failed
	// Signed, where the router has it, is the offer as sent and the
	// answer as received, with the server's signature of both
	// (protocol.AcceptSigned): what Config.Verifier checks of an accept.
	Signed *contract.Signed
}

// Notifier tells clients what happened to their contracts. Events are
// notifications; the contract record is the truth.
type Notifier interface {
	Notify(client string, ev Event)
}
