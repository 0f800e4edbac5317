package natsvc

import (
	"context"

	"github.com/bourse/bourse/protocol"
)

// publishMarket publishes the House's market data on
// bourse.v1.market.<currency> every MarketEvery until ctx ends, from the
// instance that leads (peers.leads) alone. The figures are read from the
// store and the heartbeats, which every instance shares, not summed from
// what each instance did: should two instances publish for a moment, each
// message is whole and the same, never a share to be added up.
func (s *Service) publishMarket(ctx context.Context) {
	every(ctx, s.cfg.MarketEvery, func() {
		if !s.peers.leads(s.cfg.Now()) {
			return
		}
		ms, err := s.house.Market(ctx)
		if err != nil {
			s.cfg.Logger.Warn("market data not published", "err", err)
			return
		}
		for _, m := range ms {
			body, err := protocol.Marshal(m)
			if err != nil {
				s.cfg.Logger.Error("encode market data", "currency", m.Currency, "err", err)
				continue
			}
			_ = s.nc.Publish(protocol.MarketSubject(m.Currency), body)
		}
	})
}
