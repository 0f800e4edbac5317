package natsvc

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/micro"

	"github.com/bourse/bourse"
	"github.com/bourse/bourse/protocol"
	"github.com/bourse/bourse/protocol/natswire"
)

// handleReceipts answers a server that asks what became of readings it
// holds (bourse.v1.server.<s>.receipts): each reading of the request's
// readings message is counted, as one from the usage stream would be,
// and answered with its receipt (House.Receipt). A reading over the
// server's rate of such readings is answered "again", with the time after
// which it may pass: the server keeps it, so the rate delays a reading
// here and never loses it.
func (s *Service) handleReceipts(r micro.Request) {
	server, err := sender(r, protocol.RoleServer)
	var rs protocol.Readings
	if err == nil {
		rs, err = protocol.DecodeReadings(r.Data())
	}
	if err == nil && len(rs.Readings) > protocol.MaxReceipts {
		err = &bourse.Error{Code: bourse.EInvalid, Field: "readings",
			Message: fmt.Sprintf("%d readings; at most %d a request", len(rs.Readings), protocol.MaxReceipts)}
	}
	if err != nil {
		_ = natswire.RespondError(r, err)
		return
	}
	out := protocol.Receipts{Receipts: make([]protocol.Receipt, 0, len(rs.Readings))}
	for _, sr := range rs.Readings {
		if ok, wait := s.confirms.take(server, s.cfg.Now()); !ok {
			s.refused.WithLabelValues("receipts").Inc()
			rc := protocol.Receipt{Status: protocol.ReceiptAgain,
				Error: protocol.WireError(rateLimited(server, "more readings asked about than its rate", wait))}
			if rd, err := protocol.DecodeReading(sr.Reading); err == nil {
				rc.Contract, rc.Seq = rd.Contract, rd.Seq
			}
			out.Receipts = append(out.Receipts, rc)
			continue
		}
		out.Receipts = append(out.Receipts, s.house.Receipt(context.Background(), server, sr.Reading, sr.Sig))
	}
	respond(r, out)
}

// tellStored tells server that its final readings rcs are stored (one
// message on its receipts delivery subject), so that it need not ask. A
// receipt lost on the way costs the server one question later.
func (s *Service) tellStored(server string, rcs []protocol.Receipt) {
	if len(rcs) == 0 {
		return
	}
	body, err := protocol.Marshal(protocol.Receipts{Receipts: rcs})
	if err != nil {
		s.house.Config().Logger.Error("encode receipts", "server", server, "err", err)
		return
	}
	_ = s.nc.Publish(protocol.DeliverSubject(server, protocol.DeliverReceipts), body)
}
