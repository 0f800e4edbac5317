package natsvc

import (
	"context"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse/contract"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// handleOffer answers a client's offer (bourse.v1.client.<c>.offer).
func (s *Service) handleOffer(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.OfferRequest
	if err == nil {
		err = protocol.UnderTerms(decode(r, &req)) // only terms' decoder names fields
	}
	var reply protocol.OfferReply
	if err == nil {
		reply, err = s.house.Offer(context.Background(), client, req)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, reply)
}

// handleQuote answers a client's quote (bourse.v1.client.<c>.quote).
func (s *Service) handleQuote(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.QuoteRequest
	if err == nil {
		err = protocol.UnderTerms(decode(r, &req))
	}
	var reply protocol.QuoteReply
	if err == nil {
		reply, err = s.house.Quote(context.Background(), client, req)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, reply)
}

// handleControl suspends or kills a contract; the reply is the contract as
// it stands, and the settlement follows as an event.
func (s *Service) handleControl(action contract.Reason) micro.HandlerFunc {
	return func(r micro.Request) {
		client, err := sender(r, protocol.RoleClient)
		var req protocol.ControlRequest
		if err == nil {
			err = decode(r, &req)
		}
		var c contract.Contract
		if err == nil {
			c, err = s.house.Control(context.Background(), client, req.Contract, action)
		}
		if err != nil {
			_ = natswire.RespondError(r, err)
			return
		}
		respond(r, protocol.View(c))
	}
}

func (s *Service) handleContract(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.ContractRequest
	if err == nil {
		err = decode(r, &req)
	}
	var c contract.Contract
	if err == nil {
		c, err = s.house.Contract(context.Background(), client, req.Contract)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, protocol.View(c))
}

func (s *Service) handleContracts(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.ContractsRequest
	if err == nil {
		err = decode(r, &req)
	}
	var cs []contract.Contract
	if err == nil {
		cs, err = s.house.Contracts(context.Background(), client, req.Limit)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, protocol.ContractsReply{Contracts: protocol.Views(cs)})
}

func (s *Service) handleBalance(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.BalanceRequest
	if err == nil {
		err = decode(r, &req)
	}
	var b protocol.BalanceReply
	if err == nil {
		b, err = s.house.Balance(context.Background(), client, req.Currency)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, b)
}

func (s *Service) handleStatement(r micro.Request) {
	client, err := sender(r, protocol.RoleClient)
	var req protocol.StatementRequest
	if err == nil {
		err = decode(r, &req)
	}
	var reply protocol.StatementReply
	if err == nil {
		reply.Entries, err = s.house.Statement(context.Background(), client, req.Currency, req.After, req.Limit)
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	respond(r, reply)
}
