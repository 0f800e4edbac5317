package bidder

import (
	"context"

	"github.com/bourse/bourse/protocol"
)

// Servers lists the live servers of currency cur (every currency's if
// empty), by id: their GPUs, free and in all, what they run and their
// policy, as they last said to the exchange.
func (c *Client) Servers(ctx context.Context, cur string) ([]protocol.Server, error) {
	var r protocol.ServersReply
	err := c.request(ctx, protocol.VerbServers, protocol.ServersRequest{Currency: cur}, &r)
	return r.Servers, err
}
