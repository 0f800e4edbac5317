package bidder

import (
	"context"
	"time"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
)

// OfferWait makes an offer that waits in the exchange's book, up to wait
// (at most protocol.MaxWait), if no server accepts it at once: the reply
// then has Queued, the offer as it waits and where it stands, and the
// contract comes later, when GPUs free up and a server accepts, with an
// accepted event (Events). Nothing is held while it waits. requestID
// makes a retry safe, as for Offer.
func (c *Client) OfferWait(ctx context.Context, requestID string, t contract.Terms, wait time.Duration) (protocol.OfferReply, error) {
	var r protocol.OfferReply
	err := c.request(ctx, protocol.VerbOffer, protocol.OfferRequest{RequestID: requestID, Terms: t, Wait: contract.Duration(wait)}, &r)
	return r, err
}

// Cancel takes a waiting offer (its id: the contract it would become)
// out of the book; the reply is it, left cancelled. An offer matched
// meanwhile is not_found: its contract is among Contracts.
func (c *Client) Cancel(ctx context.Context, id string) (contract.Waiting, error) {
	var r contract.Waiting
	err := c.request(ctx, protocol.VerbCancel, protocol.CancelRequest{Offer: id}, &r)
	return r, err
}

// Waiting lists the client's waiting offers in a currency (every
// currency if cur is empty), best price first, each with where it stands.
func (c *Client) Waiting(ctx context.Context, cur string) ([]contract.Waiting, error) {
	var r protocol.WaitingReply
	err := c.request(ctx, protocol.VerbWaiting, protocol.WaitingRequest{Currency: cur}, &r)
	return r.Offers, err
}
