package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/currency"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
	"github.com/bourse/bourse/trade"
)

// ownContract returns the sender's contract id. Another client's contract
// is "not found", so that ids reveal nothing.
func (s *Service) ownContract(ctx context.Context, client, id string) (trade.Contract, error) {
	c, err := s.store.Contract(ctx, id)
	if err != nil || c.Client != client {
		if err == nil || bourse.ErrorCode(err) == bourse.ENotFound {
			return trade.Contract{}, &bourse.Error{Code: bourse.ENotFound, Field: "contract", Message: "no contract " + id}
		}
		return trade.Contract{}, err
	}
	return c, nil
}

// handleControl suspends or kills a contract. An accepted contract that has
// not started is voided here; a running one is stopped by its server, whose
// final reading settles it. Either way the reply is the contract as it
// stands; the settlement follows as an event.
func (s *Service) handleControl(action trade.Reason) micro.HandlerFunc {
	return func(r micro.Request) {
		c, err := s.control(context.Background(), r, action)
		if err != nil {
			_ = natswire.RespondError(r, err)
			return
		}
		respond(r, c)
	}
}

func (s *Service) control(ctx context.Context, r micro.Request, action trade.Reason) (trade.Contract, error) {
	client, err := sender(r, protocol.RoleClient)
	if err != nil {
		return trade.Contract{}, err
	}
	var req protocol.ControlRequest
	if err := decode(r, &req); err != nil {
		return trade.Contract{}, err
	}
	c, err := s.ownContract(ctx, client, req.Contract)
	if err != nil {
		return trade.Contract{}, err
	}
	switch c.State {
	case trade.StateSettled, trade.StateVoided:
		return c, nil
	case trade.StateAccepted:
		voided, err := s.store.Update(ctx, c.ID, func(c *trade.Contract) ([]currency.Op, error) {
			if c.State != trade.StateAccepted {
				return nil, ErrNoChange
			}
			return s.void(c, action), nil
		})
		if err == nil {
			s.metrics.voided.Inc()
			s.event(protocol.EventVoided, voided)
			s.stopJob(ctx, voided, action) // in case it started meanwhile
			return voided, nil
		}
		if !errors.Is(err, ErrNoChange) {
			return trade.Contract{}, err
		}
		c = voided // it started meanwhile: stop it below
	}
	if err := s.stopJob(ctx, c, action); err != nil {
		return trade.Contract{}, &bourse.Error{Code: bourse.EUnavailable, Field: "contract",
			Message: fmt.Sprintf("server %s did not confirm; the contract settles on its last reading if the server stays silent", c.Server)}
	}
	return c, nil
}

func (s *Service) stopJob(ctx context.Context, c trade.Contract, action trade.Reason) error {
	body, _ := json.Marshal(protocol.Control{Contract: c.ID, Action: action})
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Negotiation)
	defer cancel()
	msg, err := s.nc.RequestWithContext(ctx, protocol.DeliverSubject(c.Server, protocol.DeliverControl), body)
	if err == nil {
		err = natswire.DecodeError(msg)
	}
	return err
}

func (s *Service) handleContract(r micro.Request) {
	var req protocol.ContractRequest
	client, err := sender(r, protocol.RoleClient)
	if err == nil {
		err = decode(r, &req)
	}
	var c trade.Contract
	if err == nil {
		c, err = s.ownContract(context.Background(), client, req.Contract)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, c)
}

func (s *Service) handleContracts(r micro.Request) {
	var req protocol.ContractsRequest
	client, err := sender(r, protocol.RoleClient)
	if err == nil {
		err = decode(r, &req)
	}
	var cs []trade.Contract
	if err == nil {
		if req.Limit <= 0 || req.Limit > 1000 {
			req.Limit = 100
		}
		cs, err = s.store.Contracts(context.Background(), client, req.Limit)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, protocol.ContractsReply{Contracts: cs})
}

func (s *Service) handleBalance(r micro.Request) {
	var req protocol.BalanceRequest
	client, err := sender(r, protocol.RoleClient)
	if err == nil {
		err = decode(r, &req)
	}
	var b protocol.BalanceReply
	if err == nil {
		ctx := context.Background()
		b.Balance, err = s.store.Ledger().Balance(ctx, currency.WalletID(currency.Code(req.Currency), client))
		if err == nil {
			// The wallet exists, so its currency does.
			scale, ok := s.scaleOf(ctx)(string(b.Currency))
			if !ok {
				err = bourse.Errorf(bourse.EUnavailable, "exchange.balance", "currency %s: cannot read its scale", b.Currency)
			}
			b.Scale = scale
		}
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, b)
}

func (s *Service) handleStatement(r micro.Request) {
	var req protocol.StatementRequest
	client, err := sender(r, protocol.RoleClient)
	if err == nil {
		err = decode(r, &req)
	}
	var es []currency.Entry
	if err == nil {
		if req.Limit <= 0 || req.Limit > 1000 {
			req.Limit = 100
		}
		es, err = s.store.Ledger().Statement(context.Background(), currency.WalletID(currency.Code(req.Currency), client), req.After, req.Limit)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, protocol.StatementReply{Entries: es})
}
